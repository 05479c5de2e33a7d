// The colour scheme the user chose (light or dark), or the system's when
// none: set on <html> before the page is drawn, so that it never flashes
// the other scheme. app.js has the button that changes it.
try {
  const t = localStorage.getItem('spool.theme');
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
} catch {
  // storage unavailable: the system's scheme
}
