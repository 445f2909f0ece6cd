// The inspector page's script (plain browser JavaScript, inlined into the page by page.ts; no build
// step). It lists sessions and keeps their state live from /api/events (server-sent events), and
// shows one session: its state chart with the state and the move just taken highlighted (commands
// and refusals on demand), its conversation as it was at the sequence shown (prompts, answers,
// reasoning, tool calls, waits, recoveries, compactions; /api/sessions/ID/conversation), its timeline one page at a time (earlier and later pages load as you
// scroll; jump by seq or time; filter by type and payload text), and time travel to any sequence
// (slider, timeline row, jump, or #/session/ID/at/SEQ in the address).

(() => {
  // an inspector beyond loopback takes a token: opened as #access_token=T, kept for this tab only
  const TOKEN = (() => {
    const m = /^#access_token=([^&]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem('sessiond-token', decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    return sessionStorage.getItem('sessiond-token');
  })();
  const authed = (headers) => (TOKEN ? { ...headers, authorization: 'Bearer ' + TOKEN } : headers);
  const $ = (id) => document.getElementById(id);
  const ui = {
    sessions: $('sessions').tBodies[0],
    noSessions: $('no-sessions'),
    status: $('live-status'),
    indexing: $('indexing'),
    error: $('error'),
    sessionId: $('session-id'),
    hint: $('pick-hint'),
    body: $('session-body'),
    currentState: $('current-state'),
    currentCapacity: $('current-capacity'),
    currentSeq: $('current-seq'),
    tree: $('session-tree'),
    slider: $('seq-slider'),
    seqValue: $('seq-value'),
    seqMax: $('seq-max'),
    follow: $('follow-live'),
    chart: $('chart'),
    atSeq: $('at-seq'),
    atState: $('at-state'),
    atEvent: $('at-event'),
    atLease: $('at-lease'),
    atPending: $('at-pending'),
    atWaits: $('at-waits'),
    atUsage: $('at-usage'),
    atBudget: $('at-budget'),
    atRows: $('at-rows'),
    rowsSeq: $('rows-seq'),
    atContext: $('at-context'),
    timeline: $('timeline').tBodies[0],
    timelineWrap: $('timeline-wrap'),
    commands: $('chart-commands'),
    filters: $('timeline-filters'),
    jumpSeq: $('jump-seq'),
    jumpTime: $('jump-time'),
    filterType: $('filter-type'),
    filterQ: $('filter-q'),
    filterClear: $('filter-clear'),
    timelineStatus: $('timeline-status'),
    listFilters: $('list-filters'),
    listState: $('list-state'),
    listWaiting: $('list-waiting'),
    listTag: $('list-tag'),
    listPrefix: $('list-prefix'),
    listMore: $('list-more'),
    forkId: $('fork-id'),
    forkHere: $('fork-here'),
    forkResult: $('fork-result'),
    convSeq: $('conversation-seq'),
    convStatus: $('conversation-status'),
    convWrap: $('conversation-wrap'),
    convEarlier: $('conversation-earlier'),
    convEntries: $('conversation-entries'),
    convQueued: $('conversation-queued'),
    convLive: $('conversation-live'),
  };
  // `early`: live events for the selected session that arrive while its timeline is loading.
  // `timeline`: the loaded pages (ascending); `before`/`after`: the server's cursors for the pages
  // around them (after === null: the loaded pages reach the end, so live events are appended).
  const model = {
    sessions: new Map(),
    selected: null,
    timeline: [],
    before: null,
    after: null,
    filter: { type: '', q: '' },
    paging: false,
    lastSeq: 0,
    follow: true,
    shownSeq: null,
    loading: false,
    early: [],
    commands: false,
    // the session list: `listed` when the server pages through `list` (then in its order), the
    // filter's query string, and the cursor of the next page
    listed: false,
    listQuery: '',
    next: null,
    // the conversation shown: its view (at `seq`), entries loaded so far (earlier pages prepended)
    conv: null,
    // the selected session's parent and children (sessions calling sessions), kept live
    tree: { calledBy: null, children: [] },
  };

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
    return el;
  }
  // a time no Date can hold (a notBefore from before admission refused them) shows as its number
  const clock = (ms) => (!ms ? '' : Number.isNaN(new Date(ms).getTime()) ? String(ms) + ' ms' : new Date(ms).toISOString().slice(11, 23));
  // an event the log stored well after it was decided (e.g. an append retried through an outage):
  // its commit time beside the decision time
  const COMMIT_LAG_SHOWN_MS = 250;
  const committed = (e) => {
    const lag = e.committedAt == null ? 0 : e.committedAt - e.time;
    return lag > COMMIT_LAG_SHOWN_MS
      ? h(
          'span',
          { class: 'muted', 'data-testid': 'timeline-committed', title: 'decided at ' + clock(e.time) + ', stored by the log ' + lag + ' ms later' },
          ' committed ' + clock(e.committedAt) + ' (+' + lag + ' ms)',
        )
      : null;
  };
  const stateBadge = (el, state) => {
    el.textContent = state;
    el.className = 'state state-' + state;
  };
  const short = (v, n) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
  };
  const showError = (err) => {
    ui.error.textContent = err ? String(err.message || err) : '';
  };

  async function getJson(url) {
    const res = await fetch(url, { headers: authed({ accept: 'application/json' }) });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.error?.message || 'HTTP ' + res.status + ' on ' + url);
    return body;
  }
  const sessionUrl = (id) => '/api/sessions/' + encodeURIComponent(id);

  // ---- the session list -------------------------------------------------------------------------
  function renderSessions() {
    const list = model.listed
      ? [...model.sessions.values()]
      : [...model.sessions.values()].sort((a, b) => b.time - a.time || a.sessionId.localeCompare(b.sessionId));
    ui.listMore.hidden = model.next === null;
    ui.noSessions.hidden = list.length > 0;
    ui.sessions.replaceChildren(
      ...list.map((s) =>
        h(
          'tr',
          {
            'data-testid': 'session-row',
            'data-session-id': s.sessionId,
            'aria-current': s.sessionId === model.selected ? 'true' : null,
          },
          h(
            'td',
            {},
            h('a', { href: '#/session/' + encodeURIComponent(s.sessionId), 'data-testid': 'session-link' }, s.sessionId),
            h(
              'span',
              { class: 'meta' },
              'seq ',
              h('span', { 'data-testid': 'session-seq' }, s.seq),
              s.pending ? ' \u00b7 ' + s.pending + ' pending' : '',
              ' \u00b7 ',
              s.owner ? h('span', { class: 'mono', title: s.owner }, short(s.owner, 16)) : 'no owner',
            ),
          ),
          h(
            'td',
            {},
            h('span', { class: 'state state-' + s.state, 'data-testid': 'session-state' }, s.state),
            ' ',
            s.waiting ? h('span', { class: 'state state-waiting', 'data-testid': 'session-waits' }, s.waiting + ' open') : null,
          ),
          h(
            'td',
            { class: 'mono tags', 'data-testid': 'session-tags' },
            ...Object.entries(s.tags || {})
              .map(([k, v]) => k + '=' + v)
              .concat(s.forkedFrom ? ['(fork of ' + s.forkedFrom.sessionId + '@' + s.forkedFrom.seq + ')'] : [])
              .flatMap((text, i) => [i > 0 ? ' ' : null, h('span', {}, text)]),
          ),
        ),
      ),
    );
  }

  async function loadSessions(more) {
    const params = new URLSearchParams(model.listQuery);
    if (more && model.next) params.set('after', model.next);
    const query = params.toString();
    const body = await getJson('/api/sessions' + (query ? '?' + query : ''));
    model.listed = body.listed === true;
    model.next = body.next ?? null;
    showIndexing(body.indexing);
    const page = body.sessions.map((s) => [s.sessionId, s]);
    model.sessions = more ? new Map([...model.sessions, ...page]) : new Map(page);
    renderSessions();
  }
  // a first start over a long log: its progress, and the list again until the index is complete
  let indexingTimer = null;
  function showIndexing(indexing) {
    ui.indexing.hidden = !indexing;
    ui.indexing.textContent = indexing
      ? 'indexing: ' +
        indexing.folded.toLocaleString('en-US') +
        ' of ' +
        indexing.of.toLocaleString('en-US') +
        ' events (views far back may be slow until it is done)'
      : '';
    clearTimeout(indexingTimer);
    if (indexing) indexingTimer = setTimeout(() => loadSessions(false).catch(() => undefined), 2000);
  }
  function listQueryOf() {
    const params = new URLSearchParams();
    if (ui.listState.value) params.set('state', ui.listState.value);
    if (ui.listWaiting.value) params.set('waiting', ui.listWaiting.value);
    for (const tag of ui.listTag.value.split(/\s+/).filter(Boolean)) params.append('tag', tag);
    if (ui.listPrefix.value.trim()) params.set('prefix', ui.listPrefix.value.trim());
    return params.toString();
  }

  // ---- fork here -------------------------------------------------------------------------------------
  async function forkHere() {
    const fresh = ui.forkId.value.trim();
    if (!model.selected || model.shownSeq === null) return;
    if (!fresh) {
      ui.forkResult.textContent = 'name the new session first';
      return;
    }
    const res = await fetch(sessionUrl(model.selected) + '/fork', {
      method: 'POST',
      headers: authed({ 'content-type': 'application/json', accept: 'application/json' }),
      body: JSON.stringify({ sessionId: fresh, at: model.shownSeq }),
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      ui.forkResult.replaceChildren(h('span', { class: 'error-text', 'data-testid': 'fork-error' }, body.error?.message || 'HTTP ' + res.status));
      return;
    }
    ui.forkResult.replaceChildren(
      body.created ? 'forked into ' : 'already forked into ',
      h('a', { href: '#/session/' + encodeURIComponent(body.sessionId), 'data-testid': 'fork-link' }, body.sessionId),
      ' at sequence ' + body.from.seq + ' (' + body.items + ' conversation items)',
    );
  }

  // ---- one session ---------------------------------------------------------------------------------
  const sessionLink = (id, testid) => h('a', { href: '#/session/' + encodeURIComponent(id), 'data-testid': testid }, id);
  function renderTree() {
    const { calledBy, children } = model.tree;
    ui.tree.hidden = !calledBy && children.length === 0;
    const badge = (state) => (state ? h('span', { class: 'state state-' + state }, state) : null);
    const kids = children.flatMap((c, i) => [
      i > 0 ? ', ' : '',
      h(
        'span',
        { 'data-testid': 'tree-child', 'data-session-id': c.sessionId },
        sessionLink(c.sessionId, 'tree-child-link'),
        ' ',
        badge(c.state),
        c.waitedOn ? h('span', { class: 'muted' }, ' (its turn waits on it)') : null,
      ),
    ]);
    ui.tree.replaceChildren(
      calledBy
        ? h('span', { 'data-testid': 'tree-parent' }, 'Called by ', sessionLink(calledBy.sessionId, 'tree-parent-link'), ' ', badge(calledBy.state))
        : '',
      calledBy && children.length ? h('span', { class: 'muted' }, ' \u00b7 ') : '',
      children.length
        ? h('span', { 'data-testid': 'tree-children' }, 'Called ' + children.length + (children.length === 1 ? ' session: ' : ' sessions: '), ...kids)
        : '',
    );
  }
  /** Keeps the tree live: a session newly called by the selected one, a child's or the parent's new state. */
  function treeCommitted(id, summary) {
    const t = model.tree;
    if (id === model.selected && summary.calledBy && summary.calledBy !== t.calledBy?.sessionId)
      t.calledBy = { sessionId: summary.calledBy, state: model.sessions.get(summary.calledBy)?.state ?? null };
    if (t.calledBy && t.calledBy.sessionId === id) t.calledBy = { ...t.calledBy, state: summary.state };
    const child = t.children.find((c) => c.sessionId === id);
    if (child) child.state = summary.state;
    else if (summary.calledBy === model.selected && id !== model.selected) {
      t.children.push({ sessionId: id, state: summary.state, waitedOn: false });
      t.children.sort((a, b) => a.sessionId.localeCompare(b.sessionId));
    }
    renderTree();
  }
  function renderTimeline() {
    ui.timeline.replaceChildren(
      ...model.timeline.map((e) => {
        const row = h(
          'tr',
          { 'data-testid': 'timeline-row', 'data-seq': e.seq, onclick: () => userTravel(e.seq) },
          h('td', {}, h('button', { type: 'button', 'aria-label': 'time travel to sequence ' + e.seq, 'data-testid': 'timeline-seq' }, e.seq)),
          h('td', { class: 'mono' }, clock(e.time), committed(e)),
          h('td', { class: 'mono', 'data-testid': 'timeline-type' }, e.type),
          h('td', { class: 'mono payload', title: JSON.stringify(e.payload) }, short(e.payload, 140)),
        );
        return row;
      }),
    );
    markTimeline();
    renderTimelineStatus();
  }
  function markTimeline() {
    let current = null;
    for (const row of ui.timeline.rows) {
      const seq = Number(row.dataset.seq);
      row.setAttribute('aria-current', seq === model.shownSeq ? 'true' : 'false');
      row.classList.toggle('future', model.shownSeq !== null && seq > model.shownSeq);
      if (seq === model.shownSeq) current = row;
    }
    // keep the shown event in view inside the timeline's own scroll box (never scroll the page)
    const box = ui.timelineWrap;
    if (current && (current.offsetTop < box.scrollTop || current.offsetTop + current.offsetHeight > box.scrollTop + box.clientHeight)) {
      box.scrollTop = current.offsetTop - box.clientHeight / 2;
    }
  }
  function setMax(lastSeq) {
    model.lastSeq = lastSeq;
    ui.slider.max = String(lastSeq);
    ui.seqMax.textContent = String(lastSeq);
  }
  function setFollow(on) {
    model.follow = on;
    ui.follow.setAttribute('aria-pressed', on ? 'true' : 'false');
    if (model.selected) history.replaceState(null, '', '#/session/' + encodeURIComponent(model.selected) + (on ? '' : '/at/' + model.shownSeq));
  }

  async function selectSession(id, seq) {
    if (id !== model.selected) {
      streaming.clear();
      renderLive(null);
    }
    model.selected = id;
    model.shownSeq = null;
    model.loading = true;
    model.early = [];
    renderSessions();
    ui.sessionId.textContent = id;
    ui.hint.hidden = true;
    ui.body.hidden = false;
    let view;
    try {
      view = await getJson(sessionUrl(id));
    } finally {
      if (model.selected === id) model.loading = false;
    }
    if (model.selected !== id) return;
    const later = model.early.filter((d) => d.event.seq > view.lastSeq);
    model.filter = { type: '', q: '' };
    ui.filterType.value = ui.filterQ.value = ui.jumpSeq.value = ui.jumpTime.value = '';
    model.timeline = view.timeline.events.concat(later.map((d) => d.event));
    model.before = view.timeline.before;
    model.after = null;
    const latest = later.length ? later[later.length - 1].session : view.summary;
    stateBadge(ui.currentState, latest.state);
    ui.currentSeq.textContent = String(latest.seq);
    // a model call of the running turn waits for room under the deployment's limits
    ui.currentCapacity.hidden = !view.capacity;
    ui.currentCapacity.textContent = view.capacity
      ? 'waiting for capacity since ' +
        clock(view.capacity.since) +
        ' UTC: ' +
        view.capacity.limits.map((l) => l.scope + ' ' + l.inFlight + ' of ' + l.limit + ' in flight, ' + l.waiting + ' waiting').join('; ')
      : '';
    model.tree = view.tree || { calledBy: null, children: [] };
    renderTree();
    setMax(Math.max(view.lastSeq, latest.seq));
    renderTimeline();
    ui.timelineWrap.scrollTop = ui.timelineWrap.scrollHeight;
    model.follow = seq === undefined;
    ui.follow.setAttribute('aria-pressed', model.follow ? 'true' : 'false');
    if (seq !== undefined && !model.timeline.some((e) => e.seq === seq)) await loadPage({ around: seq }, 'replace');
    await travelTo(seq === undefined ? model.lastSeq : Math.min(seq, model.lastSeq));
  }

  // ---- the timeline's pages -------------------------------------------------------------------------
  function pageUrl(params) {
    const q = new URLSearchParams(params);
    if (model.filter.type) q.set('type', model.filter.type);
    if (model.filter.q) q.set('q', model.filter.q);
    return sessionUrl(model.selected) + '/events?' + q;
  }
  // mode: 'replace' (a jump or a new filter), 'prepend' (scrolled to the top), 'append' (to the bottom)
  async function loadPage(params, mode) {
    const id = model.selected;
    model.paging = true;
    try {
      const page = await getJson(pageUrl(params));
      if (model.selected !== id) return null;
      const box = ui.timelineWrap;
      const fromBottom = box.scrollHeight - box.scrollTop;
      if (mode === 'replace') {
        model.timeline = page.events;
        model.before = page.before;
        model.after = page.after;
      } else if (mode === 'prepend') {
        model.timeline = page.events.concat(model.timeline);
        model.before = page.before;
      } else {
        model.timeline = model.timeline.concat(page.events);
        model.after = page.after;
      }
      renderTimeline();
      if (mode === 'prepend') box.scrollTop = box.scrollHeight - fromBottom; // keep the rows in view where they were
      return page;
    } finally {
      model.paging = false;
    }
  }
  function renderTimelineStatus() {
    const n = model.timeline.length;
    const range = n ? 'seq ' + model.timeline[0].seq + '\u2013' + model.timeline[n - 1].seq : 'no events';
    const filtered = [model.filter.type && 'type ' + model.filter.type, model.filter.q && 'text "' + model.filter.q + '"'].filter(Boolean).join(', ');
    ui.timelineStatus.textContent =
      (filtered ? n + ' matching (' + filtered + '), ' : n + ' loaded, ') +
      range +
      ' of ' +
      model.lastSeq +
      (model.before !== null ? '; scroll up for earlier' : '') +
      (model.after !== null ? '; scroll down for later' : '');
  }
  async function onTimelineScroll() {
    const box = ui.timelineWrap;
    if (model.paging || !model.selected) return;
    if (box.scrollTop < 40 && model.before !== null) await loadPage({ before: model.before }, 'prepend');
    else if (box.scrollTop + box.clientHeight > box.scrollHeight - 40 && model.after !== null) await loadPage({ after: model.after }, 'append');
  }
  async function applyFilters() {
    model.filter = { type: ui.filterType.value.trim(), q: ui.filterQ.value.trim() };
    const seq = ui.jumpSeq.value.trim();
    const time = ui.jumpTime.value.trim();
    if (seq !== '') {
      const target = Number(seq);
      if (!Number.isInteger(target) || target < 0 || target > model.lastSeq)
        throw new Error('Jump to a sequence from 0 to ' + model.lastSeq + ' (got "' + seq + '").');
      await loadPage(model.filter.q ? { before: target + 1 } : { around: target }, 'replace');
      scrollToSeq(target);
      userTravel(target);
    } else if (time !== '') {
      const page = await loadPage({ time }, 'replace');
      const ms = /^\d+$/.test(time) ? Number(time) : Date.parse(time);
      const hit = page?.events.find((e) => e.time >= ms);
      if (hit) {
        scrollToSeq(hit.seq);
        userTravel(hit.seq);
      }
    } else {
      await loadPage({}, 'replace');
      ui.timelineWrap.scrollTop = ui.timelineWrap.scrollHeight;
    }
    showError(null);
  }
  function scrollToSeq(seq) {
    const row = ui.timeline.querySelector('[data-seq="' + seq + '"]');
    if (row) ui.timelineWrap.scrollTop = row.offsetTop - ui.timelineWrap.clientHeight / 2;
  }
  function matchesFilter(e) {
    const t = model.filter.type;
    const typeOk = !t || t.split(',').some((p) => (p.endsWith('.*') ? e.type.startsWith(p.slice(0, -1)) : e.type === p.trim()));
    return typeOk && (!model.filter.q || JSON.stringify(e.payload).toLowerCase().includes(model.filter.q.toLowerCase()));
  }

  // Time travel: one request at a time; a newer target replaces a queued one.
  let queued = null;
  let travelling = false;
  async function travelTo(seq) {
    queued = seq;
    if (travelling) return;
    travelling = true;
    try {
      while (queued !== null) {
        const target = queued;
        queued = null;
        await showAt(model.selected, target);
      }
    } finally {
      travelling = false;
    }
  }
  function userTravel(seq) {
    model.shownSeq = seq;
    setFollow(false);
    travelTo(seq).catch(showError);
  }

  async function showAt(id, seq) {
    const chartUrl = '/api/chart.svg?session=' + encodeURIComponent(id) + '&seq=' + seq + (model.commands ? '&commands=1' : '');
    const [at, svg, conv] = await Promise.all([
      getJson(sessionUrl(id) + '/at/' + seq),
      fetch(chartUrl, { headers: authed({}) }).then((r) => (r.ok ? r.text() : Promise.reject(new Error('chart: HTTP ' + r.status)))),
      getJson(sessionUrl(id) + '/conversation?seq=' + seq),
    ]);
    if (model.selected !== id) return;
    model.shownSeq = at.seq;
    ui.slider.value = String(at.seq);
    ui.seqValue.textContent = String(at.seq);
    ui.atSeq.textContent = String(at.seq);
    stateBadge(ui.atState, at.state);
    ui.atEvent.textContent = at.event ? at.event.type + ' at ' + clock(at.event.time) + ' UTC' : 'before the first event';
    renderLease(at.lease);
    ui.atPending.replaceChildren(
      ...(at.pending.length
        ? at.pending.map((p) => h('li', { class: 'mono' }, p.inputId + ' (' + p.delivery + ', admitted at seq ' + p.seq + ')'))
        : [h('li', { class: 'muted' }, 'none')]),
    );
    ui.atWaits.replaceChildren(
      ...(at.waits.length
        ? at.waits.map((w) =>
            h(
              'li',
              { class: 'mono', 'data-testid': 'at-wait' },
              w.kind +
                ' ' +
                w.name +
                (w.tool ? ' (' + w.tool + ' ' + JSON.stringify(w.input === undefined ? null : w.input).slice(0, 120) + ')' : '') +
                (w.until !== null ? ', until ' + clock(w.until) + ' UTC' : '') +
                ': ' +
                (w.outcome === null ? 'open since ' + clock(w.since) + ' UTC' : w.outcome + (w.reason ? ' (' + w.reason + ')' : '')),
            ),
          )
        : [h('li', { class: 'muted' }, 'nothing')]),
    );
    ui.atUsage.textContent =
      at.usage.inputTokens +
      ' in, ' +
      at.usage.outputTokens +
      ' out' +
      (at.usage.costUsd === undefined ? '' : ', $' + at.usage.costUsd) +
      ' (summed over the model steps and compactions so far)';
    const b = at.budget;
    ui.atBudget.textContent =
      !b || (b.tokens === null && b.costUsd === null)
        ? 'none (sessiond budget ' + at.sessionId + ' --tokens N sets one)'
        : [b.tokens === null ? null : b.spent.tokens + ' of ' + b.tokens + ' tokens', b.costUsd === null ? null : '$' + b.spent.costUsd + ' of $' + b.costUsd]
            .filter(Boolean)
            .join(', ') +
          ' spent since the latest reset' +
          ((b.tokens !== null && b.spent.tokens >= b.tokens) || (b.costUsd !== null && b.spent.costUsd >= b.costUsd)
            ? ': spent, no model call until it is raised or reset'
            : '');
    renderRows(at.rows, at.seq);
    ui.atContext.textContent = JSON.stringify(at.context, null, 2);
    renderChart(svg, at.state, at.seq);
    renderConversation(conv, false);
    markTimeline();
    showError(null);
  }

  const ENDED = {
    succeeded: 'succeeded',
    failed: 'failed',
    waiting: 'waiting, holding no lease',
    handed_back: 'handed back',
    cancelled: 'cancelled',
    recovered: 'recovered',
  };
  function renderLease(lease) {
    if (!lease) {
      ui.atLease.replaceChildren(h('dt', {}, 'status'), h('dd', { 'data-testid': 'lease-status', class: 'lease-ended' }, 'no execution yet'));
      return;
    }
    // what ended it, as the events say (views.ts leaseView: settled, cancelled, or recovered after it expired)
    const ended = lease.ended ? ENDED[lease.ended.outcome] + (lease.ended.error ? ': ' + short(lease.ended.error, 80) : '') : null;
    const rel =
      lease.status === 'live'
        ? 'expires in ' + (lease.remainingMs / 1000).toFixed(1) + ' s'
        : lease.status === 'expired'
          ? (-lease.remainingMs / 1000).toFixed(1) + ' s before' + (ended ? '; ' + ended : '; not yet recovered')
          : ended;
    ui.atLease.replaceChildren(
      h('dt', {}, 'status'),
      h('dd', { 'data-testid': 'lease-status', class: 'lease-' + lease.status }, lease.status + ' (' + rel + ')'),
      h('dt', {}, 'execution'),
      h('dd', { class: 'mono', 'data-testid': 'lease-execution' }, lease.executionId),
      h('dt', {}, 'owner'),
      h('dd', { class: 'mono', 'data-testid': 'lease-owner' }, lease.ownerId),
      h('dt', {}, 'expires at'),
      h('dd', { class: 'mono', 'data-testid': 'lease-expires' }, clock(lease.expiresAt) + ' UTC (lease ' + lease.leaseMs / 1000 + ' s)'),
    );
  }

  // Rows are rendered generically: every array of objects becomes a table; times read as UTC clock times.
  const isTime = (col, v) => typeof v === 'number' && v > 1e12 && /^time_|_at$/.test(col);
  // a prompt of parts (session_input.parts, JSON text): one line per part, bytes by size, never inlined
  const kibOf = (bytes) => (Math.round(bytes / 102.4) / 10).toLocaleString('en') + ' KiB';
  const kib = (b64) => kibOf((b64.length * 3) / 4);
  // an image or file part: a stored part (base64 `data`) or the conversation's view of one (`bytes`, `url` bounded)
  function describeMedia(p) {
    const what = p.type === 'file' && p.filename ? 'file ' + p.filename : p.type;
    const url = p.url && typeof p.url === 'object' ? p.url.text : p.url;
    const source = url ? url : (p.mediaType ? p.mediaType + ', ' : '') + (p.data !== undefined ? kib(p.data) : kibOf(p.bytes || 0));
    return what + ' (' + (url && p.mediaType ? p.mediaType + ', ' : '') + short(source, 60) + ')';
  }
  function describePart(p) {
    if (p.type === 'text') return 'text: ' + short(p.text, 60);
    if (p.type === 'json') return 'json: ' + short(JSON.stringify(p.value), 60);
    return describeMedia(p);
  }
  function partsCell(v) {
    let parts;
    try {
      parts = JSON.parse(v);
    } catch {
      parts = null;
    }
    if (!Array.isArray(parts)) return null;
    return h(
      'td',
      { title: parts.length + (parts.length === 1 ? ' part' : ' parts') },
      h(
        'ul',
        { class: 'prompt-parts', 'data-testid': 'prompt-parts' },
        parts.map((p) => h('li', { class: 'mono', 'data-part': String(p.type) }, describePart(p))),
      ),
    );
  }
  function cell(col, v) {
    if (v === null || v === undefined) return h('td', { class: 'muted' }, '\u2014');
    if (col === 'parts' && typeof v === 'string') {
      const td = partsCell(v);
      if (td) return td;
    }
    const full = typeof v === 'string' ? v : JSON.stringify(v);
    return h(
      'td',
      { class: 'mono', title: isTime(col, v) ? String(v) : full },
      isTime(col, v) ? clock(v) : short(v, col === 'data' || col === 'prompt' ? 60 : 32),
    );
  }
  function renderRows(rows, seq) {
    ui.rowsSeq.textContent = String(seq);
    if (rows === null || typeof rows !== 'object') {
      ui.atRows.replaceChildren(h('p', { class: 'muted' }, 'This inspector has no rows source.'));
      return;
    }
    const parts = [];
    for (const [name, value] of Object.entries(rows)) {
      if (!Array.isArray(value)) continue;
      const total = rows.counts && typeof rows.counts[name] === 'number' ? rows.counts[name] : value.length;
      parts.push(h('h4', {}, name + ' (' + (total > value.length ? 'latest ' + value.length + ' of ' + total : total) + ')'));
      if (value.length === 0) continue;
      const cols = [...new Set(value.flatMap((r) => Object.keys(r)))].filter((c) => c !== 'session_id');
      parts.push(
        h(
          'table',
          { 'data-testid': 'rows-' + name },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              cols.map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            value.map((r) =>
              h(
                'tr',
                {},
                cols.map((c) => cell(c, r[c])),
              ),
            ),
          ),
        ),
      );
    }
    ui.atRows.replaceChildren(...parts);
  }

  // ---- the conversation (entries: conversation-view.js) ---------------------------------------------
  const { entryNode, num } = conversationView({ h, clock, describeMedia, travel: (seq) => userTravel(seq) });
  // `more`: an earlier page was loaded (prepend it); otherwise the view replaces what was shown
  function renderConversation(view, more) {
    const same = more && model.conv && model.conv.seq === view.seq;
    const entries = same ? view.entries.concat(model.conv.entries) : view.entries;
    model.conv = { seq: view.seq, entries, before: view.before, total: view.total };
    ui.convSeq.textContent = String(view.seq);
    const box = ui.convWrap;
    const fromBottom = box.scrollHeight - box.scrollTop;
    ui.convEntries.replaceChildren(...entries.map((e) => entryNode(e, view.asOf, view.seq)));
    ui.convQueued.replaceChildren(
      ...(view.queuedTotal
        ? [
            h(
              'p',
              { class: 'conv-note' },
              view.queuedTotal + ' queued, not yet in a turn' + (view.queuedTotal > view.queued.length ? ' (the first ' + view.queued.length + ')' : '') + ':',
            ),
            h(
              'ol',
              { id: 'conversation-queued-list', style: 'list-style:none;margin:0;padding:0' },
              view.queued.map((e) => entryNode(e, view.asOf, view.seq)),
            ),
          ]
        : []),
    );
    ui.convEarlier.hidden = view.before === null;
    ui.convStatus.textContent =
      view.total === 0 && view.queuedTotal === 0
        ? 'Nothing said yet at this sequence.'
        : view.total +
          (view.total === 1 ? ' entry' : ' entries') +
          (entries.length < view.total ? ', the latest ' + entries.length + ' shown' : '') +
          '; text is cut past ' +
          num(view.limits.text) +
          ' characters (tool values past ' +
          num(view.limits.value) +
          '), saying how much; bytes are never shown.';
    if (more)
      box.scrollTop = box.scrollHeight - fromBottom; // keep the entries in view where they were
    else {
      // the last entry the event at this sequence changed, whole when it fits (with what came before it), else the latest
      const changed = ui.convEntries.querySelectorAll('[aria-current="true"]');
      const current = changed[changed.length - 1];
      box.scrollTop = current
        ? Math.max(0, Math.min(current.offsetTop - 8, current.offsetTop + current.offsetHeight - box.clientHeight + 8))
        : box.scrollHeight;
    }
  }
  async function loadEarlierConversation() {
    if (!model.conv || model.conv.before === null || !model.selected) return;
    const id = model.selected;
    const view = await getJson(sessionUrl(id) + '/conversation?seq=' + model.conv.seq + '&before=' + model.conv.before);
    if (model.selected === id) renderConversation(view, true);
  }

  const CHART_LABEL_PX = 11.5;
  function renderChart(svg, state, seq) {
    ui.chart.innerHTML = svg.slice(svg.indexOf('<svg'));
    const el = ui.chart.querySelector('svg');
    if (el) {
      el.removeAttribute('width');
      el.removeAttribute('height');
      el.setAttribute('aria-hidden', 'true');
      // never drawn so small that its smallest label reads under CHART_LABEL_PX (the figure scrolls
      // instead), nor larger than its natural size (1 unit = 1 pt)
      const box = el.viewBox.baseVal;
      const sizes = [...el.querySelectorAll('text')].map((t) => Number.parseFloat(t.getAttribute('font-size'))).filter((n) => n > 0);
      if (box && box.width > 0 && sizes.length) {
        el.style.minWidth = Math.ceil((box.width * CHART_LABEL_PX) / Math.min(...sizes)) + 'px';
        el.style.maxWidth = Math.ceil((box.width * 4) / 3) + 'px';
      }
    }
    ui.chart.dataset.highlight = state;
    ui.chart.setAttribute('aria-label', 'State chart of the session machine; at sequence ' + seq + ' the session is ' + state);
  }

  // ---- live updates ----------------------------------------------------------------------------------
  function onCommitted(msg) {
    const d = JSON.parse(msg.data);
    // a filtered list keeps to the sessions it listed; the rest take every session live
    if (d.session && (!model.listQuery || model.sessions.has(d.sessionId)))
      model.sessions.set(d.sessionId, { ...(model.sessions.get(d.sessionId) || {}), ...d.session });
    renderSessions();
    if (model.selected && d.session && !model.loading) treeCommitted(d.sessionId, d.session);
    if (d.sessionId !== model.selected || !d.session) return;
    settleLive(d.event);
    if (model.loading) {
      model.early.push(d);
      return;
    }
    if (model.after === null && matchesFilter(d.event) && !model.timeline.some((e) => e.seq === d.event.seq)) {
      model.timeline.push(d.event);
      model.timeline.sort((a, b) => a.seq - b.seq);
      renderTimeline();
    }
    stateBadge(ui.currentState, d.session.state);
    ui.currentSeq.textContent = String(d.session.seq);
    setMax(Math.max(model.lastSeq, d.event.seq));
    if (model.follow) travelTo(model.lastSeq).catch(showError);
  }

  // ---- answers as they stream (the worker's live bus: text and reasoning deltas, never stored) ---------
  // shown below the conversation while following the head; the committed text replaces them
  const streaming = new Map(); // partId -> { messageId, kind, text }
  const progress = new Map(); // callId -> { messageId, text } (tool.progressed, live only)
  function renderLive(note) {
    const parts = [...streaming.values()];
    const tools = [...progress.entries()];
    ui.convLive.hidden = parts.length === 0 && tools.length === 0 && !note;
    ui.convLive.replaceChildren(
      ...parts.map((p) => h('p', { class: p.kind === 'reasoning' ? 'muted' : '', 'data-testid': 'conv-live-' + p.kind }, p.text)),
      ...tools.map(([callId, t]) => h('p', { class: 'mono muted', 'data-testid': 'conv-live-progress' }, callId + ': ' + t.text)),
      note ? h('p', { class: 'conv-note', 'data-testid': 'conv-live-note' }, note) : null,
    );
  }
  function onLive(msg) {
    const d = JSON.parse(msg.data);
    if (d.sessionId !== model.selected || !model.follow) return;
    const p = d.payload;
    if (d.type === 'text.delta' || d.type === 'reasoning.delta') {
      const part = streaming.get(p.partId) || { messageId: p.messageId, kind: d.type === 'text.delta' ? 'text' : 'reasoning', text: '' };
      part.text += p.delta;
      streaming.set(p.partId, part);
      renderLive('streaming now (live, not yet recorded)');
    } else if (d.type === 'tool.progressed') {
      const of = p.total === undefined ? '' : ' of ' + p.total;
      progress.set(p.callId, { messageId: p.messageId, text: p.progress + of + (p.message ? ' (' + p.message + ')' : '') });
      renderLive(null);
    } else if (d.type === 'model.retry_scheduled') {
      renderLive('the model request failed (' + p.error.message + '): sending it again in ' + p.delayMs + ' ms');
    } else if (d.type === 'turn.interrupted') {
      // keep what the log recorded of each part; what streamed after it is gone with the owner
      for (const [id, part] of streaming) {
        const r = p.recorded.find((x) => x.partId === id);
        if (r) part.text = part.text.slice(0, r.length);
        else streaming.delete(id);
      }
      renderLive(
        'the turn was interrupted (' +
          (p.reason === 'handed_back' ? 'its worker stopped and handed it back' : 'its worker stopped renewing its lease') +
          '): it goes on in a continuation',
      );
    }
  }
  /** A committed event of the shown session ends the streaming of what it settles. */
  function settleLive(event) {
    const p = event.payload || {};
    if (/^tool\.(succeeded|failed)$/.test(event.type)) progress.delete(p.callId);
    if (event.type === 'execution.settled') progress.clear();
    if (event.type === 'text.completed' || event.type === 'reasoning.completed') streaming.delete(p.partId);
    else if (/^step\.(ended|failed|recovered)$/.test(event.type) || event.type === 'execution.settled')
      for (const [id, part] of streaming)
        if (event.type === 'execution.settled' || part.messageId === p.messageId) streaming.delete(id);
        else return;
    renderLive(null);
  }

  function connect() {
    const events = new EventSource('/api/events' + (TOKEN ? '?access_token=' + encodeURIComponent(TOKEN) : ''));
    events.addEventListener('open', () => {
      ui.status.textContent = 'live';
      loadSessions().then(() => showError(null), showError);
    });
    events.addEventListener('error', () => {
      ui.status.textContent = 'reconnecting';
    });
    events.addEventListener('committed', onCommitted);
    events.addEventListener('live', onLive);
  }

  // ---- wiring ------------------------------------------------------------------------------------------
  function route() {
    const m = /^#\/session\/([^/]+)(?:\/at\/(\d+))?$/.exec(location.hash);
    if (!m) return;
    selectSession(decodeURIComponent(m[1]), m[2] === undefined ? undefined : Number(m[2])).catch(showError);
  }
  ui.slider.addEventListener('input', () => {
    ui.seqValue.textContent = ui.slider.value;
    userTravel(Number(ui.slider.value));
  });
  ui.follow.addEventListener('click', () => {
    setFollow(true);
    travelTo(model.lastSeq).catch(showError);
  });
  ui.commands.addEventListener('click', () => {
    model.commands = !model.commands;
    ui.commands.setAttribute('aria-pressed', model.commands ? 'true' : 'false');
    if (model.selected && model.shownSeq !== null) travelTo(model.shownSeq).catch(showError);
  });
  ui.timelineWrap.addEventListener('scroll', () => {
    onTimelineScroll().catch(showError);
  });
  ui.filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    applyFilters().catch(showError);
  });
  ui.filterClear.addEventListener('click', () => {
    ui.filterType.value = ui.filterQ.value = ui.jumpSeq.value = ui.jumpTime.value = '';
    applyFilters().catch(showError);
  });
  ui.listFilters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    model.listQuery = listQueryOf();
    loadSessions(false).then(() => showError(null), showError);
  });
  ui.listMore.addEventListener('click', () => {
    loadSessions(true).catch(showError);
  });
  ui.convEarlier.addEventListener('click', () => {
    loadEarlierConversation().catch(showError);
  });
  ui.forkHere.addEventListener('click', () => {
    forkHere().catch(showError);
  });
  window.addEventListener('hashchange', route);
  loadSessions().catch(showError);
  connect();
  route();
})();
