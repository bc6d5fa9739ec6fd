// A history as a timeline: what happened to a memory or an entity, by whom, why, the
// fields before and after, and the job run that did it.

import { badge, el, short, when } from './dom.js';
import { jobOfRun } from './jobs.js';

// What a history row says happened, in words.
function actionLabel(entry) {
  const after = entry.after || {};
  if (entry.action === 'updated' && after.absorbed) return 'absorbed a duplicate';
  if (entry.action === 'updated' && (after.source_event_ids || after.restated)) return 'refreshed';
  return entry.action;
}

function changeText(value) {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'number') return String(Number(value.toFixed(3)));
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text && text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

function changes(entry) {
  const before = entry.before || {}, after = entry.after || {};
  const same = (name) => name in before && name in after && JSON.stringify(before[name]) === JSON.stringify(after[name]);
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((name) => !same(name));
  if (!names.length) return null;
  return el('dl', { class: 'changes' }, names.map((name) => [
    el('dt', {}, name),
    el('dd', {}, name in before ? el('span', { class: 'before' }, changeText(before[name])) : null,
      name in before && name in after ? ' → ' : null,
      name in after ? el('span', { class: 'after' }, changeText(after[name])) : null)]));
}

// The rows of a history, oldest first, as the API gives them.
export function timeline(history) {
  return el('ol', { class: 'timeline', id: 'history' }, history.map((entry) => {
    const run = entry.job_run_id ? el('span', { class: 'run-ref mono', 'data-run-id': entry.job_run_id }, `run …${short(entry.job_run_id)}`) : null;
    if (run) jobOfRun(entry.job_run_id).then((name) => { if (name) run.textContent = `${name} run …${short(entry.job_run_id)}`; });
    const label = actionLabel(entry);
    return el('li', { 'data-action': entry.action, 'data-label': label },
      el('div', { class: 'tl-head' }, badge(label, entry.action), el('span', { class: 'muted' }, when(entry.created_at)), run,
        entry.actor ? el('span', { class: 'muted small' }, `by ${entry.actor}`) : null),
      entry.reason ? el('div', { class: 'tl-reason' }, entry.reason) : null,
      changes(entry));
  }));
}
