// The shop page's own code. It talks to the snippet only through `cdp(...)`, as a site would,
// and its live log comes from the snippet's events (`cdp('on', …)`).
import { dashboard } from '/config.js';

const $ = (selector) => document.querySelector(selector);
const log = $('#log');

/** Adds a line to the live log: kind is stored | sent | answer | problem | info. */
function note(kind, text) {
  const li = document.createElement('li');
  li.className = kind;
  const label = document.createElement('span');
  label.className = 'kind';
  label.textContent = kind;
  li.append(`${new Date().toLocaleTimeString()} `, label, ` ${text}`);
  log.prepend(li);
}

// The snippet loads async: calls before it loads are queued by the stub and return nothing,
// so wait for it (bounded) when we want the Promise that says "stored in IndexedDB".
async function loaded() {
  for (let i = 0; i < 100 && !window.cdp.loaded; i++) await new Promise((r) => setTimeout(r, 50));
  if (!window.cdp.loaded) throw new Error('the snippet did not load; is the relay running?');
}
async function call(...args) {
  await loaded();
  return window.cdp(...args);
}
// Every call's failure (the snippet not loaded, bad input) shows in the log, never as an
// unhandled rejection.
const problem = (error) => note('problem', error.message);

// "Go offline": requests to the relay fail as they would without a network; back online,
// the browser's `online` event makes the snippet send what it kept.
let offline = false;
const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  if (offline && url.endsWith('/collect')) {
    note('problem', 'offline: the request failed; the items stay queued');
    throw new TypeError('Failed to fetch (demo: offline)');
  }
  return realFetch(input, init);
};

// The live log, from the snippet's own events: what left, and what the relay said of each item
// (one answer's results arrive together, so they are gathered into one line).
const names = (items) => items.map((item) => item.activity_id ?? item.type).join(', ');
window.cdp('on', 'send', ({ items, beacon }) =>
  note('sent', `${items.length} item${items.length === 1 ? '' : 's'} to the relay${beacon ? ' (exit beacon)' : ''}: ${names(items)}`),
);
let answered = {};
let gathering = false;
window.cdp('on', 'result', ({ status }) => {
  answered[status] = (answered[status] ?? 0) + 1;
  if (gathering) return;
  gathering = true;
  queueMicrotask(() => {
    note(
      'answer',
      Object.entries(answered)
        .map(([result, n]) => `${result} ${n}`)
        .join(', '),
    );
    answered = {};
    gathering = false;
  });
});
if (navigator.sendBeacon) {
  const realBeacon = navigator.sendBeacon.bind(navigator);
  navigator.sendBeacon = (url, body) => (offline ? false : realBeacon(url, body));
}

window.cdp('on', 'reject', ({ item, error }) => note('problem', `rejected ${item.activity_id ?? item.type}: ${error}`));
window.cdp('on', 'drop', ({ item, reason }) => note('info', `dropped ${item?.activity_id ?? item?.type ?? 'an item'} (${reason})`));
window.cdp('on', 'error', ({ message, retryIn }) => note('problem', `${message}; retrying in ${(retryIn / 1000).toFixed(1)} s`));
window.cdp('on', 'storage-error', () => note('problem', 'IndexedDB is unavailable; the queue lives in memory for this page'));

async function stored(what, promise) {
  try {
    await promise;
    note('stored', `${what} (kept in IndexedDB until the relay answers)`);
  } catch (error) {
    note('problem', `${what}: ${error.message}`);
  }
}

// Page view on load.
void stored('page view', call('page'));

// Add to cart.
let cart = 0;
for (const button of document.querySelectorAll('.add')) {
  button.addEventListener('click', () => {
    const { product, price } = button.closest('.product').dataset;
    $('#cart').textContent = String(++cart);
    void stored(`added-to-cart ${product}`, call('track', 'act:cm:added-to-cart', { 'str:cm:product': product, 'int:cm:price': Number(price) }));
  });
}

// Sign up: our server signs the email, then identify + track.
$('#signup').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const answer = await realFetch('/api/user-hash', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: form.get('email') }),
  });
  const signed = await answer.json();
  if (!answer.ok) return note('problem', signed.error?.message ?? `user-hash: ${answer.status}`);
  const fields = { 'str::email': signed.email };
  if (form.get('first')) fields['str::first'] = String(form.get('first'));
  await stored(`identify ${signed.email}`, call('identify', fields, { user_hash: signed.user_hash, tags: ['demo'] }));
  await stored('signed-up', call('track', 'act:cm:signed-up', { 'str:cm:plan': String(form.get('plan')) }));
  event.target.reset();
});

// Consent banner: pending until the visitor chooses; the choice is remembered by the snippet
// (in IndexedDB) and by this page (for the banner).
function showConsent(state) {
  $('#consent-state').textContent = state;
  $('#banner').hidden = state !== 'pending';
}
for (const [id, state] of [
  ['#accept', 'granted'],
  ['#decline', 'denied'],
]) {
  $(id).addEventListener('click', async () => {
    localStorage.setItem('demo-consent', state);
    showConsent(state);
    await call('consent', state).then(
      () => note('info', state === 'granted' ? 'consent granted: the queue is sent' : 'consent denied: the queue is deleted, nothing is stored'),
      problem,
    );
  });
}
showConsent(localStorage.getItem('demo-consent') ?? 'pending');
$('#consent-change').addEventListener('click', () => ($('#banner').hidden = false));

$('#offline').addEventListener('change', (event) => {
  offline = event.target.checked;
  note('info', offline ? 'offline: events are stored, sends fail and are retried' : 'online again: sending what was kept');
  if (!offline) window.dispatchEvent(new Event('online'));
});
$('#flush').addEventListener('click', () => call('flush').catch(problem));
$('#reset').addEventListener('click', () => call('reset').then(() => note('info', 'reset: a new anonymous visitor from now on'), problem));
if (dashboard) $('#dashboard').href = dashboard;
else $('#dashboard').remove();
