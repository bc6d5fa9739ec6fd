// The jobs page: every job with its schedule and last run; runs and dry runs over one
// user or the tenant, followed until they end; pausing and resuming; a job's past runs.

import { api, can, session } from './api.js';
import { append, badge, counts, el, errorBox, field, loading, notify, put, short, when } from './dom.js';

const runNames = new Map(); // job run id -> its job's name, filled as runs are looked up

// The name of the job a run belongs to, for a key that may see runs; null otherwise.
export async function jobOfRun(id) {
  if (!can.jobs) return null;
  if (!runNames.has(id)) {
    runNames.set(id, api('GET', `admin/v1/jobs/runs/${encodeURIComponent(id)}`).then((run) => run.job, () => null));
  }
  return runNames.get(id);
}

export async function jobsPage(page) {
  append(page, [el('h1', {}, 'Jobs')]);
  if (!can.jobs) {
    page.append(el('p', { class: 'muted' }, 'Jobs need a key with the admin scope.'));
    return;
  }
  const scope = el('input', { name: 'user', value: session.caller.user_id || session.user || '', placeholder: 'every user of the tenant', size: 18 });
  const runs = el('div', { id: 'runs' });
  const table = el('div', {}, loading());
  const recent = el('div', { id: 'recent' });
  append(page, [
    el('form', { class: 'card inline-form', onsubmit: (event) => event.preventDefault() },
      field('Runs cover user', scope),
      el('span', { class: 'muted small' }, 'leave empty for every user of the tenant')),
    runs, table, recent]);

  const trigger = async (job, dryRun) => {
    const body = { dry_run: dryRun };
    if (scope.value.trim()) body.user_id = scope.value.trim();
    const card = el('div', { class: 'card run' }, loading());
    runs.prepend(card);
    try {
      const queued = await api('POST', `admin/v1/jobs/${encodeURIComponent(job)}/runs`, { body });
      card.dataset.runId = queued.run_id;
      await follow(card, queued.run_id);
      load();
    } catch (err) {
      put(card, el('strong', {}, `${dryRun ? 'Dry run' : 'Run'} of ${job}`), errorBox(err));
    }
  };
  const pause = async (job, paused) => {
    try {
      await api('POST', `admin/v1/jobs/${encodeURIComponent(job)}/${paused ? 'pause' : 'resume'}`);
      notify(`${job} ${paused ? 'paused' : 'resumed'}.`);
      load();
    } catch (err) {
      runs.prepend(errorBox(err));
    }
  };

  async function load() {
    try {
      const { jobs } = await api('GET', 'admin/v1/jobs');
      put(table, el('table', { id: 'jobs', class: 'grid jobs' },
        el('thead', {}, el('tr', {}, ['Job', 'Schedule', 'State', 'Last run', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, jobs.map((job) => el('tr', { 'data-job': job.name },
          el('td', {}, el('strong', {}, job.name)),
          el('td', {}, el('span', { class: 'mono small' }, job.schedule), el('div', { class: 'small muted' }, job.next_run_at ? `next ${when(job.next_run_at)}` : 'no next tick')),
          el('td', {}, job.paused ? badge('paused') : job.enabled ? badge('scheduled', 'active') : badge('disabled')),
          el('td', { class: 'small' }, job.last_run ? runSummary(job.last_run) : el('span', { class: 'muted' }, 'never run')),
          el('td', { class: 'job-actions' },
            el('button', { type: 'button', 'data-action': 'run', onclick: () => trigger(job.name, false) }, 'Run'),
            el('button', { type: 'button', 'data-action': 'dry-run', onclick: () => trigger(job.name, true) }, 'Dry run'),
            can.operator ? el('button', { type: 'button', 'data-action': job.paused ? 'resume' : 'pause', onclick: () => pause(job.name, !job.paused) },
              job.paused ? 'Resume' : 'Pause') : null,
            el('button', { type: 'button', class: 'link', 'data-action': 'history', onclick: () => recentRuns(recent, job.name) }, 'Runs')))))));
    } catch (err) {
      put(table, errorBox(err));
    }
  }
  load();
}

function runSummary(run) {
  return el('div', { class: 'run-summary' },
    el('div', {}, badge(run.status), run.dry_run ? badge('dry run', 'dry') : null, ' ', when(run.finished_at || run.started_at || run.created_at),
      el('span', { class: 'muted' }, ` · ${run.trigger}${run.user_id ? ` · ${run.user_id}` : ''}`)),
    el('div', { class: 'muted counts' }, counts(run.counts)),
    run.stop_reason ? el('div', { class: 'muted' }, `stopped: ${run.stop_reason}`) : null,
    run.error ? el('div', { class: 'run-error' }, run.error) : null);
}

// Polls a run until it has finished, showing it in `card`.
async function follow(card, id) {
  for (;;) {
    const run = await api('GET', `admin/v1/jobs/runs/${encodeURIComponent(id)}`);
    runNames.set(id, Promise.resolve(run.job));
    const finished = !['queued', 'running'].includes(run.status);
    card.dataset.status = run.status;
    put(card,
      el('div', { class: 'run-title' }, el('strong', {}, run.dry_run ? `Dry run of ${run.job}` : `Run of ${run.job}`),
        el('span', { class: 'mono small muted' }, ` …${short(run.id)}`)),
      run.dry_run && finished ? el('p', { class: 'small' }, 'Nothing was changed. This is what the run would do:') : null,
      el('div', { class: 'status' }, badge(run.status)),
      el('dl', { class: 'counts-list' }, Object.entries(run.counts || {}).map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
      run.error ? el('div', { class: 'run-error' }, run.error) : null);
    if (finished) return run;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
}

// A job's past runs, newest first (GET /admin/v1/jobs/{job}/runs), a page at a time.
function recentRuns(box, job) {
  const body = el('tbody');
  const more = el('div', { class: 'more' });
  put(box, el('h2', {}, `Recent runs of ${job}`),
    el('table', { class: 'grid', id: 'recent-runs' },
      el('thead', {}, el('tr', {}, ['Run', 'Status', 'Scope', 'Counts', 'Error'].map((h) => el('th', {}, h)))),
      body),
    more);
  const load = async (cursor) => {
    put(more, loading());
    try {
      const found = await api('GET', `admin/v1/jobs/${encodeURIComponent(job)}/runs`, { query: { limit: 20, cursor } });
      for (const run of found.runs) {
        runNames.set(run.id, Promise.resolve(run.job));
        body.append(el('tr', { 'data-run-id': run.id },
          el('td', { class: 'small' }, el('span', { class: 'mono' }, `…${short(run.id)}`), el('div', { class: 'muted' }, when(run.created_at))),
          el('td', {}, badge(run.status), run.dry_run ? badge('dry run', 'dry') : null, el('div', { class: 'small muted' }, run.trigger)),
          el('td', { class: 'small' }, run.user_id || run.tenant_id || 'every tenant'),
          el('td', { class: 'small counts' }, counts(run.counts)),
          el('td', { class: 'small run-error' }, run.error || '')));
      }
      if (!found.runs.length && !cursor) body.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No runs yet.')));
      put(more, found.next_cursor ? el('button', { type: 'button', onclick: () => load(found.next_cursor) }, 'Older runs') : null);
    } catch (err) {
      put(more, errorBox(err));
    }
  };
  load();
}
