// A framework-free single-page app: a 20-line router on the History API, and the tracker from
// the ESM build (what `import { createTracker } from 'cdp-edge/browser'` gives a bundled app).
import { createTracker } from '/browser.js';
import { relay, key } from '/config.js';

// spa: true sends a page view now and after every pushState/replaceState/popstate.
const cdp = createTracker({ relay, key, spa: true });

const log = document.querySelector('#log');
function note(text) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  log.prepend(li);
}
cdp.on('reject', ({ item, error }) => note(`rejected ${item.activity_id ?? item.type}: ${error}`));
cdp.on('error', ({ message }) => note(`send failed (${message}); kept and retried`));

const VIEWS = {
  '/spa/': () => '<h2>Welcome</h2><p>Move between the pages above: each route change is a page view, without a page load.</p>',
  '/spa/teas': () => '<h2>Teas</h2><p>Earl Grey, Assam, Sencha. <button id="add">Add Sencha to cart</button></p>',
  '/spa/about': () => '<h2>About</h2><p>This app imports <code>createTracker</code> from the ESM build served at <code>/browser.js</code>.</p>',
  '/spa/account': () => `<h2>Account</h2>
    <p>Page views wait in IndexedDB until the visitor is known; sign in to send them.</p>
    <form id="signin"><label>Email <input name="email" type="email" required placeholder="you@example.com"></label>
    <button type="submit">Sign in</button></form>`,
};

function render() {
  const view = VIEWS[location.pathname] ?? (() => '<h2>Not found</h2><p><a href="/spa/" data-link>Home</a></p>');
  document.querySelector('#view').innerHTML = view();
  note(`page view ${location.pathname}`);
}

// The router: same-origin links with data-link change the route without loading a page.
document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-link]');
  if (!link || event.metaKey || event.ctrlKey) return;
  event.preventDefault();
  if (link.pathname !== location.pathname) history.pushState({}, '', link.pathname);
  render();
});
addEventListener('popstate', render);

document.addEventListener('click', (event) => {
  if (event.target.id !== 'add') return;
  cdp.track('act:cm:added-to-cart', { 'str:cm:product': 'Sencha', 'int:cm:price': 6 }).then(
    () => note('added-to-cart Sencha'),
    (e) => note(e.message),
  );
});
document.addEventListener('submit', async (event) => {
  if (event.target.id !== 'signin') return;
  event.preventDefault();
  const email = new FormData(event.target).get('email');
  const answer = await fetch('/api/user-hash', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
  const signed = await answer.json();
  if (!answer.ok) return note(signed.error?.message ?? `user-hash: ${answer.status}`);
  await cdp.identify({ 'str::email': signed.email }, { user_hash: signed.user_hash });
  note(`signed in as ${signed.email}`);
  history.pushState({}, '', '/spa/');
  render();
});

render();
