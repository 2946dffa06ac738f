export {
  checkTemplate,
  type ParsedTemplate,
  parseTemplate,
  renderTemplate,
  replacePlaceholder,
} from './render-template.js';
export { splitCommandLine } from './split-template.js';
