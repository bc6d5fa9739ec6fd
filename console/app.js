// engram's web console: a page over the public API, signed in with an API key, so it
// can do nothing that key cannot. No framework and no build step. This module signs in
// and out, draws the header and the navigation, and routes `#/…` to the pages; each page
// is its own module. Every text that comes from the API goes into the page as text
// (createTextNode / textContent), never as markup; the server's Content-Security-Policy
// allows these files and nothing inline.

import { can, forgetKey, resumeSession, session, setUser, signIn, whenRefused } from './api.js';
import { $, badge, el, errorBox, field, loading, put, showPendingNotice } from './dom.js';
import { graphPage } from './graph-page.js';
import { jobsPage } from './jobs.js';
import { memoriesPage } from './memory.js';
import { searchPage } from './search.js';
import { turnsPage } from './turns.js';
import { userPage, usersPage } from './users.js';
import { webhooksPage } from './webhooks.js';

// ---------------------------------------------------------------- signing in and out

function signOut(message) {
  forgetKey();
  location.hash = '';
  chrome();
  signInPage(message);
}

function signInPage(message) {
  const input = el('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'egm_…' });
  const status = el('div', { class: 'signin-status' }, message ? errorBox(message) : null);
  const form = el('form', { id: 'signin', class: 'card signin', onsubmit: async (event) => {
    event.preventDefault();
    put(status, loading());
    try {
      await signIn(input.value.trim());
      start();
    } catch (err) {
      put(status, errorBox(err.status === 401 ? 'That key was refused.' : err));
    }
  } },
  el('h1', {}, 'Sign in'),
  el('p', { class: 'muted' }, 'With an engram API key. It stays in this browser tab (session storage) and goes to the API as a bearer token only; the console can do what the key can, nothing more.'),
  field('API key', input),
  el('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  status);
  $('#main').replaceChildren(form);
  input.focus();
}

// Opens the page for the key this tab holds, if any, at the address's route.
async function start() {
  if (!session.key) return signInPage();
  if (!session.caller) {
    try {
      await resumeSession();
    } catch (err) {
      return signInPage(err.status === 401 ? 'That key was refused.' : err);
    }
  }
  if (session.caller.user_id) setUser(session.caller.user_id);
  chrome();
  if (!location.hash || location.hash === '#' || location.hash === '#/') {
    location.hash = session.caller.user_id ? `#/users/${encodeURIComponent(session.caller.user_id)}` : '#/users';
  } else {
    route();
  }
}

// The header (tenant, scopes, sign-out) and the navigation.
function chrome() {
  const who = $('#who');
  const nav = $('#nav');
  if (!session.caller) {
    put(who);
    nav.hidden = true;
    return;
  }
  const caller = session.caller;
  put(who,
    el('span', { class: 'who-item' }, 'tenant ', el('strong', { id: 'tenant' }, caller.tenant)),
    el('span', { class: 'who-item', id: 'scopes' }, caller.scopes.map((s) => badge(s, 'scope'))),
    caller.user_id ? el('span', { class: 'who-item' }, 'bound to ', el('strong', { id: 'bound-user' }, caller.user_id)) : null,
    !can.ingest ? el('span', { class: 'who-item read-only' }, 'read-only') : null,
    el('button', { type: 'button', id: 'signout', class: 'link', onclick: () => signOut() }, 'Sign out'));
  const link = (href, text, extra = {}) => el('a', { href, ...extra }, text);
  const user = session.user;
  put(nav,
    link('#/users', session.caller.user_id ? 'User' : 'Users', { 'data-nav': 'users' }),
    user ? el('div', { class: 'nav-user' }, el('div', { class: 'nav-heading' }, user),
      link(`#/users/${encodeURIComponent(user)}/memories`, 'Memory', { 'data-nav': 'memories' }),
      link(`#/users/${encodeURIComponent(user)}/turns`, 'Turns & sessions', { 'data-nav': 'turns' }),
      link(`#/users/${encodeURIComponent(user)}/graph`, 'Graph', { 'data-nav': 'graph' })) : null,
    link('#/search', 'Search & context', { 'data-nav': 'search' }),
    can.jobs ? link('#/jobs', 'Jobs', { 'data-nav': 'jobs' }) : null,
    can.admin && !caller.user_id ? link('#/webhooks', 'Webhooks', { 'data-nav': 'webhooks' }) : null);
  nav.hidden = false;
}

function markNav(name) {
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.nav === name);
}

// ---------------------------------------------------------------- routing

function route() {
  if (!session.caller) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const page = el('div', { class: 'page' });
  $('#main').replaceChildren(el('div', { id: 'flash' }), page);
  showPendingNotice();
  window.scrollTo(0, 0);
  const [section, user, view, id] = parts;
  if (section === 'users' && user) {
    if (user !== session.user) { setUser(user); chrome(); }
    markNav(view || 'users');
    if (view === 'memories') return memoriesPage(page, user, id);
    if (view === 'turns') return turnsPage(page, user, id);
    if (view === 'graph') return graphPage(page, user);
    return userPage(page, user);
  }
  markNav(section || 'users');
  if (section === 'search') return searchPage(page);
  if (section === 'jobs') return jobsPage(page);
  if (section === 'webhooks') return webhooksPage(page);
  return usersPage(page);
}

window.addEventListener('hashchange', route);

whenRefused(() => signOut('The key was refused: it may have been revoked.'));
start();
