// The console's one way to the API: the signed-in key and what it may do, and `api()`,
// which sends that key as a bearer token and turns error bodies into ApiError. The key
// lives in this tab's sessionStorage and in the Authorization header, nowhere else.

// The API is the directory above /console/, so the console works behind a path prefix.
const apiBase = new URL('../', location.href);
const KEY = 'engram.key';
const USER = 'engram.user';

// The key, who it is (GET /v1/whoami) and the user the pages are about.
export const session = { key: sessionStorage.getItem(KEY), caller: null, user: sessionStorage.getItem(USER) };

export const can = {
  get ingest() { return session.caller?.scopes.includes('ingest'); },
  get admin() { return session.caller?.scopes.includes('admin'); },
  get operator() { return session.caller?.scopes.includes('operator'); },
  get jobs() { return can.admin || can.operator; },
};

// The API's error body, `{"error": {"code", "message", "field"}}`, with the status.
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || 'error';
    this.field = error.field;
  }
}

let onRefused = () => {};

// What to do when the API refuses a key it took before (revoked while signed in).
export function whenRefused(handler) {
  onRefused = handler;
}

export async function api(method, path, { query, body } = {}) {
  const url = new URL(path, apiBase);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, value);
  }
  const headers = { Authorization: `Bearer ${session.key}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (response.status === 401 && session.caller) {
    forgetKey();
    onRefused();
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const userPath = (user, ...rest) => ['v1/users', encodeURIComponent(user), ...rest.map(encodeURIComponent)].join('/');

// Asks the API who `key` is and keeps the key for this tab only if it answers.
export async function signIn(key) {
  session.key = key;
  await identify();
  sessionStorage.setItem(KEY, key);
}

// Asks the API who the key this tab kept is (after a reload).
export async function resumeSession() {
  await identify();
}

async function identify() {
  try {
    session.caller = await api('GET', 'v1/whoami');
  } catch (err) {
    forgetKey();
    throw err;
  }
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
  Object.assign(session, { key: null, caller: null, user: null });
}

export function setUser(user) {
  session.user = user;
  sessionStorage.setItem(USER, user);
}
