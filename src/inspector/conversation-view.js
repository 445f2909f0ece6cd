// The conversation entries of the inspector page (plain browser JavaScript, inlined into the page
// by page.ts before client.js; no build step). Rendered from the view model the server folds
// (src/inspector/conversation.ts): one <li> per entry; large text arrives bounded
// ({ text, length, cut }) and says how much was cut; bytes never arrive.
// `conversationView(deps)` returns `entryNode(entry, asOf, shownSeq)`; deps are client.js's
// element builder `h`, `clock`, `describeMedia` and `travel(seq)`, and `num`, the number format it uses.

// biome-ignore lint/correctness/noUnusedVariables: client.js calls it (both scripts are inlined into one page)
function conversationView({ h, clock, describeMedia, travel }) {
  const duration = (ms) => (ms === null || ms === undefined ? '' : ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s');
  const num = (n) => n.toLocaleString('en');
  function cutNote(b) {
    return b && b.cut > 0
      ? h('span', { class: 'cut', 'data-testid': 'cut', title: num(b.length) + ' characters in all' }, ' \u2026 ' + num(b.cut) + ' more characters not shown')
      : null;
  }
  const bounded = (b, cls, testid) => h(cls === 'pre' ? 'pre' : 'p', { class: cls === 'pre' ? 'mono' : cls, 'data-testid': testid }, b.text, cutNote(b));
  function travelButton(seq) {
    return h(
      'button',
      { type: 'button', class: 'seq-link', 'data-testid': 'conv-seq', 'aria-label': 'time travel to sequence ' + seq, onclick: () => travel(seq) },
      'seq ' + seq,
    );
  }
  function head(e, ...parts) {
    return h('div', { class: 'conv-head' }, ...parts, e.forked ? h('span', {}, '(from the fork source)') : travelButton(e.seq));
  }
  const TURN_ENDS = {
    succeeded: 'succeeded',
    failed: 'failed',
    handed_back: 'handed back (its worker shut down; a continuation was admitted)',
    waiting: 'waiting, holding no lease',
    cancelled: 'cancelled',
    interrupted: 'interrupted (its owner was lost; recovered)',
  };
  function promptEntry(e) {
    const who = e.source === 'recovery' ? 'Continuation' : 'Prompt';
    const state =
      e.state === 'queued'
        ? 'queued' +
          (e.delivery === 'steer' ? ' (steer: joins the running turn at its next step)' : ', waiting for a turn') +
          (e.notBefore ? ', not before ' + clock(e.notBefore) + ' UTC' : '')
        : e.state === 'dropped'
          ? 'dropped unrun' + (e.droppedBy ? ' by ' + e.droppedBy : '') + (e.droppedReason ? ': ' + e.droppedReason : '')
          : e.delivery === 'steer'
            ? 'steered into the turn'
            : null;
    const body = [];
    if (e.continues) {
      const what =
        { interrupted: 'an interrupted turn', handed_back: 'a turn handed back', resumed: 'a turn that waited' }[e.continues.reason] || e.continues.reason;
      body.push(
        h(
          'p',
          { class: 'conv-note', 'data-testid': 'conv-continues' },
          'continues ' +
            what +
            ' (' +
            e.continues.executionId +
            ', phase ' +
            e.continues.phase +
            ')' +
            (e.continues.retryTools.length ? '; to retry: ' + e.continues.retryTools.join(', ') : ''),
        ),
        h('details', {}, h('summary', { class: 'conv-note' }, "the runner's note to the model"), bounded(e.text, 'conv-text', 'conv-text')),
      );
    } else if (e.parts) {
      body.push(
        h(
          'ul',
          { class: 'prompt-parts', 'data-testid': 'conv-parts' },
          e.parts.map((p) =>
            h(
              'li',
              { 'data-part': p.type },
              p.type === 'text'
                ? bounded(p.text, 'conv-text')
                : p.type === 'json'
                  ? h('span', { class: 'mono' }, 'json: ' + p.value.text, cutNote(p.value))
                  : h('span', { class: 'mono' }, describeMedia(p)),
            ),
          ),
        ),
      );
    } else body.push(bounded(e.text, 'conv-text', 'conv-text'));
    return [
      head(e, h('strong', {}, who), state ? h('span', { 'data-testid': 'conv-prompt-state' }, state) : null, h('span', { class: 'mono' }, e.inputId)),
      ...body,
    ];
  }
  function toolPart(p, asOf) {
    const stateWords = {
      called: 'called, not started',
      awaiting_approval: 'awaiting approval',
      approved: 'approved, not yet run',
      denied: 'denied, never ran',
      cancelled: 'cancelled, never ran',
      running: 'running' + (p.startedAt !== null && asOf >= p.startedAt ? ' for ' + duration(asOf - p.startedAt) : ''),
      succeeded: 'succeeded',
      failed: 'failed',
    };
    const approval = p.approval
      ? h(
          'p',
          { class: 'conv-note', 'data-testid': 'conv-approval' },
          p.approval.outcome === null
            ? 'waits for a person since ' +
                clock(p.approval.since) +
                ' UTC (' +
                duration(Math.max(0, asOf - p.approval.since)) +
                ' so far): sessiond approve|deny'
            : 'approval ' +
                p.approval.outcome +
                (p.approval.actor ? ' by ' + p.approval.actor : '') +
                (p.approval.reason ? ' ("' + p.approval.reason + '")' : '') +
                (p.approval.waitedMs !== null ? ' after ' + duration(p.approval.waitedMs) : ''),
        )
      : null;
    return h(
      'div',
      { class: 'conv-tool', 'data-testid': 'conv-tool', 'data-state': p.state, 'data-call': p.callId },
      h(
        'div',
        { class: 'conv-head' },
        h('strong', { class: 'mono' }, p.name),
        h('span', { 'data-testid': 'conv-tool-state' }, stateWords[p.state] || p.state),
        p.durationMs !== null ? h('span', { 'data-testid': 'conv-tool-duration' }, 'in ' + duration(p.durationMs)) : null,
        p.durable ? h('span', { title: p.idempotencyKey || '' }, 'durable') : null,
        p.ranIn ? h('span', { class: 'mono', title: 'the execution it ran in' }, 'ran in ' + p.ranIn) : null,
      ),
      p.input ? h('div', {}, h('span', { class: 'conv-note' }, 'input'), bounded(p.input, 'pre', 'conv-tool-input')) : null,
      approval,
      p.output ? h('div', {}, h('span', { class: 'conv-note' }, 'output'), bounded(p.output, 'pre', 'conv-tool-output')) : null,
      p.error ? h('p', { class: 'error-text', 'data-testid': 'conv-tool-error' }, p.error.type + ': ' + p.error.message.text, cutNote(p.error.message)) : null,
    );
  }
  function stepEntry(e, asOf) {
    const status =
      e.status === 'running'
        ? 'running for ' + duration(Math.max(0, asOf - e.time))
        : e.status === 'completed'
          ? 'completed' + (e.finish ? ' (' + e.finish + ')' : '')
          : e.status === 'recovered'
            ? 'interrupted, sealed by recovery' + (e.recoveredReason ? ' (' + e.recoveredReason + ')' : '')
            : 'failed';
    return [
      head(
        e,
        h('strong', {}, 'Assistant'),
        e.step !== null ? h('span', {}, 'step ' + e.step) : null,
        h('span', { 'data-testid': 'conv-step-status' }, status),
        e.durationMs !== null ? h('span', {}, 'in ' + duration(e.durationMs)) : null,
        e.usage ? h('span', {}, num(e.usage.inputTokens) + ' in / ' + num(e.usage.outputTokens) + ' out tokens') : null,
      ),
      ...e.parts.map((p) =>
        p.type === 'tool'
          ? toolPart(p, asOf)
          : p.type === 'reasoning'
            ? bounded(p.text, 'conv-reasoning', 'conv-reasoning')
            : p.partial
              ? h(
                  'div',
                  { 'data-testid': 'conv-partial' },
                  bounded(p.text, 'conv-text', 'conv-answer'),
                  h('p', { class: 'conv-note' }, '(streamed so far, as recorded)'),
                )
              : bounded(p.text, 'conv-text', 'conv-answer'),
      ),
      e.error ? h('p', { class: 'error-text', 'data-testid': 'conv-step-error' }, e.error.type + ': ' + e.error.message.text, cutNote(e.error.message)) : null,
      e.status === 'running' && e.parts.length === 0
        ? h('p', { class: 'conv-note' }, '(nothing recorded yet: text streams live and is stored when the step records it)')
        : null,
    ];
  }
  function turnEntry(e, asOf) {
    const how =
      e.outcome === null
        ? 'running for ' + duration(Math.max(0, asOf - e.time))
        : (TURN_ENDS[e.outcome] || e.outcome) +
          (e.outcome === 'waiting' && e.waitingFor.length
            ? ' for ' + e.waitingFor.map((w) => (w.kind === 'approval' ? 'approval of ' + (w.tool || w.name) : w.kind + ' ' + w.name)).join(', ')
            : '') +
          (e.cancelledBy ? ' by ' + e.cancelledBy : '') +
          (e.cancelReason ? ': ' + e.cancelReason : '') +
          (e.error ? ': ' + e.error.message.text : '') +
          (e.durationMs !== null ? ', after ' + duration(e.durationMs) : '');
    return [head(e, h('span', {}, 'turn ' + e.executionId + ' by ' + e.ownerId + ':'), h('strong', { 'data-testid': 'conv-turn-outcome' }, how))];
  }
  const sessionLink = (id) => h('a', { href: '#/session/' + encodeURIComponent(id), class: 'mono', 'data-testid': 'conv-child-link' }, id);
  function callAnswer(a) {
    return h(
      'div',
      { class: 'conv-answer', 'data-testid': 'conv-child-answer', 'data-outcome': a.outcome },
      h('span', { class: 'conv-note' }, 'its answer (' + a.outcome + '):'),
      a.text.text ? bounded(a.text, 'conv-text', 'conv-child-text') : h('p', { class: 'conv-note' }, '(no text)'),
      a.error ? h('p', { class: 'conv-note error-text' }, a.error.text, cutNote(a.error)) : null,
    );
  }
  function waitEntry(e, asOf) {
    const open = e.outcome === null;
    if (e.waitKind === 'session' && e.child) {
      return [
        head(
          e,
          h('strong', {}, 'Session call ' + e.name + ' to'),
          sessionLink(e.child),
          e.until ? h('span', {}, 'until ' + clock(e.until) + ' UTC') : null,
          h(
            'span',
            { 'data-testid': 'conv-wait-outcome' },
            open
              ? 'waiting for its turn for ' + duration(Math.max(0, asOf - e.time))
              : e.outcome + (e.waitedMs !== null ? ' after ' + duration(e.waitedMs) : ''),
          ),
        ),
        e.reason ? h('p', { class: 'conv-note' }, e.reason) : null,
        e.answer ? callAnswer(e.answer) : e.data ? bounded(e.data, 'pre', 'conv-wait-data') : null,
      ];
    }
    return [
      head(
        e,
        h('strong', {}, 'Waits for ' + e.waitKind + ' ' + e.name),
        e.until ? h('span', {}, 'until ' + clock(e.until) + ' UTC') : null,
        h(
          'span',
          { 'data-testid': 'conv-wait-outcome' },
          open
            ? 'open for ' + duration(Math.max(0, asOf - e.time))
            : e.outcome + (e.actor ? ' by ' + e.actor : '') + (e.waitedMs !== null ? ' after ' + duration(e.waitedMs) : ''),
        ),
      ),
      e.reason ? h('p', { class: 'conv-note' }, e.reason) : null,
      e.data ? bounded(e.data, 'pre', 'conv-wait-data') : null,
    ];
  }
  function compactionEntry(e) {
    return [
      head(
        e,
        h('strong', {}, 'Compaction'),
        e.reason ? h('span', {}, e.reason) : null,
        e.summary === null ? h('span', {}, 'summarizing\u2026') : e.durationMs !== null ? h('span', {}, 'in ' + duration(e.durationMs)) : null,
      ),
      e.summary
        ? h(
            'div',
            {},
            h('span', { class: 'conv-note' }, 'the summary the model sees in place of the history above'),
            bounded(e.summary, 'conv-text', 'conv-summary'),
          )
        : null,
    ];
  }
  function recoveryEntry(e) {
    const wake = e.wakeFailed
      ? 'wake attempt ' + e.wakeFailed.attempt + ' failed' + (e.wakeFailed.parked ? ', parked' : '') + ': ' + e.wakeFailed.error.message.text
      : e.wakeDeliveredSeq !== null
        ? 'woken (seq ' + e.wakeDeliveredSeq + ')'
        : e.wakeAttempts
          ? e.wakeAttempts + ' wake attempt' + (e.wakeAttempts === 1 ? '' : 's')
          : null;
    return [
      head(
        e,
        h('strong', {}, 'Recovery'),
        h('span', { class: 'mono' }, 'of ' + e.executionId),
        h('span', {}, e.completedSeq === null ? 'in progress' : 'done'),
      ),
      e.completedSeq !== null
        ? h(
            'p',
            { class: 'conv-note', 'data-testid': 'conv-recovery' },
            'its owner was lost: open work sealed; phase ' +
              e.phase +
              (e.continuationInputId ? '; continuation ' + e.continuationInputId : '; no continuation') +
              (e.error ? '; ' + e.error.message.text : '') +
              (wake ? '; ' + wake : ''),
          )
        : null,
    ];
  }
  function entryNode(e, asOf, shownSeq) {
    const body =
      e.kind === 'prompt'
        ? promptEntry(e)
        : e.kind === 'step'
          ? stepEntry(e, asOf)
          : e.kind === 'turn'
            ? turnEntry(e, asOf)
            : e.kind === 'wait'
              ? waitEntry(e, asOf)
              : e.kind === 'compaction'
                ? compactionEntry(e)
                : e.kind === 'recovery'
                  ? recoveryEntry(e)
                  : [
                      head(
                        e,
                        h('strong', {}, 'Forked'),
                        h('span', {}, 'from ' + e.from.sessionId + ' at sequence ' + e.from.seq + ' (' + e.items + ' items above)'),
                      ),
                    ];
    const cls =
      'conv conv-' +
      (e.kind === 'recovery' ? 'recovery-entry' : e.kind) +
      (e.kind === 'prompt' && e.source === 'recovery' ? ' conv-recovery' : '') +
      (e.kind === 'prompt' ? ' conv-' + e.state.replace('_', '-') : '');
    return h(
      'li',
      { class: cls, 'data-testid': 'conv-entry', 'data-kind': e.kind, 'data-seq': e.seq, 'aria-current': e.changedSeq === shownSeq ? 'true' : null },
      body,
    );
  }
  return { entryNode, num };
}
