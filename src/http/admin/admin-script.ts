/**
 * The admin page's script (served as `/admin.js`, so the page's CSP allows no inline script): swaps in
 * the sections `/events` sends (HTML rendered and escaped on the server), and sends an action when a
 * button with `data-action` is pressed (POST with the action header, after a confirmation).
 */
export const ADMIN_SCRIPT = `'use strict';
(() => {
  const status = (text) => { const s = document.getElementById('status'); if (s) s.textContent = text; };
  const events = new EventSource('/events');
  events.addEventListener('sections', (e) => {
    const sections = JSON.parse(e.data);
    for (const [id, markup] of Object.entries(sections)) {
      const el = document.getElementById(id);
      if (el) el.innerHTML = markup;
    }
  });
  events.addEventListener('error', () => status('Live updates interrupted; retrying…'));
  events.addEventListener('open', () => status(''));
  document.addEventListener('click', async (e) => {
    const button = e.target instanceof Element ? e.target.closest('button[data-action]') : null;
    if (!button) return;
    if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
    button.disabled = true;
    try {
      const res = await fetch(button.dataset.action, { method: 'POST', headers: { 'x-admin-action': '1' } });
      status(res.ok ? 'Done.' : 'Refused (' + res.status + ').');
    } catch (err) {
      status('Failed: ' + err.message);
    }
  });
})();
`;
