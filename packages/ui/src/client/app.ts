/** The page's entry: shows the jobs table at `/` and a job at `/job/<id>`. */
import { withToken } from './api.js';
import { h, tickDurations } from './dom.js';
import { showJobPage } from './job-page.js';
import { showJobsTable } from './jobs-table.js';

function start(): void {
  const main = document.getElementById('main');
  if (!main) return;
  // A running job's duration goes on while the page is open, without a reload.
  window.setInterval(tickDurations, 1000);
  const job = /^\/job\/([0-9a-f]{1,64})$/.exec(location.pathname);
  if (job) showJobPage(main, job[1] as string);
  else if (location.pathname === '/') showJobsTable(main);
  else
    main.replaceChildren(
      h('p', {}, 'Nothing here. ', h('a', { href: withToken('/') }, 'All jobs')),
    );
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
