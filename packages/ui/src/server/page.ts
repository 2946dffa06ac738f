/** The one HTML page the server sends for every view: the shell the bundled script fills, with the session's CSRF token and its token (which stays with this page: its links and requests carry it). */

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** The page shell; `assetVersion` keeps a cached script from outliving its server. */
export function renderPage(secrets: { csrf: string; token: string }, assetVersion: string): string {
  const query = `v=${encodeURIComponent(assetVersion)}&amp;token=${encodeURIComponent(secrets.token)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<meta name="yonder-csrf" content="${escapeAttribute(secrets.csrf)}">
<meta name="yonder-token" content="${escapeAttribute(secrets.token)}">
<title>yonder</title>
<link rel="stylesheet" href="/assets/app.css?${query}">
<script defer src="/assets/app.js?${query}"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/?token=${encodeURIComponent(secrets.token)}">yonder</a>
  <span id="connection" class="connection" role="status" aria-live="polite"></span>
</header>
<div id="banners" class="banners" role="region" aria-label="Problems" aria-live="polite"></div>
<main id="main" tabindex="-1"><p class="loading">Loading…</p></main>
<noscript><p>yonder ui needs JavaScript.</p></noscript>
</body>
</html>
`;
}
