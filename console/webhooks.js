// The webhooks page: the tenant's subscriptions with what waits for each, their recent
// deliveries, subscribing a URL (its signing secret shown once) and deleting one.

import { api, can, session } from './api.js';
import { append, badge, el, errorBox, field, loading, notify, put, short, when } from './dom.js';

const EVENTS = ['memory.created', 'memory.updated', 'memory.deleted', 'memory.superseded', 'user.deleted', 'job.failed'];

export async function webhooksPage(page) {
  append(page, [el('h1', {}, 'Webhooks')]);
  if (!can.admin || session.caller.user_id) {
    page.append(el('p', { class: 'muted' }, 'Webhooks need a key with the admin scope that is not bound to one user.'));
    return;
  }
  const table = el('div', {}, loading());
  const deliveries = el('div', { id: 'deliveries' });
  const created = el('div', { id: 'created-webhook' });
  const url = el('input', { name: 'url', type: 'url', required: true, placeholder: 'the receiver’s URL', size: 40 });
  const boxes = EVENTS.map((name) => el('label', { class: 'check' },
    el('input', { type: 'checkbox', name: 'events', value: name, checked: name.startsWith('memory.') ? true : null }), ` ${name}`));
  const form = el('form', { id: 'subscribe', class: 'card', onsubmit: async (event) => {
    event.preventDefault();
    const events = boxes.map((label) => label.firstChild).filter((box) => box.checked).map((box) => box.value);
    try {
      const hook = await api('POST', 'admin/v1/webhooks', { body: { url: url.value.trim(), events } });
      put(created, el('div', { class: 'card secret' },
        el('strong', {}, 'Subscribed. '), 'Its signing secret is shown only now:',
        el('div', { class: 'mono', id: 'webhook-secret' }, hook.secret)));
      url.value = '';
      load();
    } catch (err) {
      put(created, errorBox(err));
    }
  } },
  el('h2', {}, 'Subscribe a URL'), field('URL', url), el('div', { class: 'checks' }, boxes),
  el('button', { type: 'submit', class: 'primary' }, 'Subscribe'));
  append(page, [table, created, form, deliveries]);

  const remove = async (hook) => {
    try {
      await api('DELETE', `admin/v1/webhooks/${encodeURIComponent(hook.id)}`);
      notify(`Deleted the webhook to ${hook.url}.`);
      put(deliveries);
      load();
    } catch (err) {
      put(deliveries, errorBox(err));
    }
  };

  async function load() {
    try {
      const { webhooks } = await api('GET', 'admin/v1/webhooks');
      put(table, webhooks.length ? el('table', { id: 'webhooks', class: 'grid' },
        el('thead', {}, el('tr', {}, ['URL', 'Events', 'Waiting', 'Since', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, webhooks.map((hook) => el('tr', { 'data-webhook': hook.id },
          el('td', {}, el('span', { class: 'mono small' }, hook.url), hook.description ? el('div', { class: 'small muted' }, hook.description) : null),
          el('td', { class: 'small' }, hook.events.join(', ')),
          el('td', {}, hook.pending ? badge(`${hook.pending} waiting`, 'pending') : badge('none waiting', 'active'),
            hook.oldest_pending_at ? el('div', { class: 'small muted' }, `oldest ${when(hook.oldest_pending_at)}`) : null),
          el('td', { class: 'small' }, when(hook.created_at)),
          el('td', {},
            el('button', { type: 'button', 'data-action': 'deliveries', onclick: () => recent(deliveries, hook) }, 'Deliveries'),
            el('button', { type: 'button', class: 'link', 'data-action': 'delete', onclick: () => remove(hook) }, 'Delete'))))))
        : el('p', { class: 'muted', id: 'no-webhooks' }, 'No webhook is subscribed.'));
    } catch (err) {
      put(table, errorBox(err));
    }
  }
  load();
}

// A subscription's latest attempts, newest first.
async function recent(box, hook) {
  put(box, loading());
  try {
    const { deliveries } = await api('GET', `admin/v1/webhooks/${encodeURIComponent(hook.id)}/deliveries`, { query: { limit: 50 } });
    put(box, el('h2', {}, `Deliveries to ${hook.url}`),
      deliveries.length ? el('table', { class: 'grid', id: 'webhook-deliveries' },
        el('thead', {}, el('tr', {}, ['When', 'Event', 'Attempt', 'Outcome', 'Answer'].map((h) => el('th', {}, h)))),
        el('tbody', {}, deliveries.map((d) => el('tr', { 'data-outcome': d.outcome },
          el('td', { class: 'small' }, when(d.attempted_at), el('div', { class: 'mono muted' }, `#${short(String(d.delivery_id))}`)),
          el('td', { class: 'small' }, d.event),
          el('td', { class: 'small' }, String(d.attempt)),
          el('td', {}, badge(d.outcome, d.outcome === 'delivered' ? 'active' : d.outcome)),
          el('td', { class: 'small' }, d.status_code ? `HTTP ${d.status_code}` : '', d.error ? el('div', { class: 'run-error' }, d.error) : null)))))
        : el('p', { class: 'muted' }, 'No delivery has been attempted yet.'));
  } catch (err) {
    put(box, errorBox(err));
  }
}
