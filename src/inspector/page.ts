/**
 * The inspector page: one self-contained HTML document (markup and CSS here, the scripts from
 * conversation-view.js and client.js inlined), no build step and nothing fetched from elsewhere. Element ids and
 * data-testid attributes are stable: the browser test and anyone scripting the page rely on them.
 */
import { readFileSync } from 'node:fs';
import { durableEventTypes } from '../events/catalog.ts';

const client = readFileSync(new URL('./client.js', import.meta.url), 'utf8');
const conversationView = readFileSync(new URL('./conversation-view.js', import.meta.url), 'utf8');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const css = `
  :root { --fg:#1d1d1f; --muted:#5f6368; --line:#d0d4d9; --bg:#fafafa; --accent:#0b57d0; --now:#ffd54f; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--fg); background: var(--bg); }
  body { margin: 0; }
  [hidden] { display: none !important; }
  header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1.5rem; padding: .75rem 1.25rem; border-bottom: 1px solid var(--line); background: #fff; }
  h1 { font-size: 1.25rem; margin: 0; } h2 { font-size: 1.1rem; margin: 0 0 .5rem; } h3 { font-size: 1rem; margin: 1rem 0 .4rem; } h4 { font-size: .9rem; margin: .8rem 0 .3rem; }
  code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
  main { display: grid; grid-template-columns: minmax(22rem, 27rem) 1fr; gap: 1rem; padding: 1rem 1.25rem; align-items: start; }
  section.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; min-width: 0; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .3rem .45rem; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { font-size: .8rem; color: var(--muted); font-weight: 600; }
  tr[aria-current="true"] > td { background: #e8f0fe; }
  tr.future > td { color: #9aa0a6; }
  a { color: var(--accent); }
  button { font: inherit; padding: .2rem .6rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
  button:hover { border-color: var(--accent); }
  button:focus-visible, a:focus-visible, input:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
  button[aria-pressed="true"] { background: var(--accent); color: #fff; border-color: var(--accent); }
  .state { display: inline-block; padding: 0 .45rem; border-radius: 999px; border: 1px solid #999; font-size: .85rem; font-weight: 600; }
  .state-idle { background: #eceff1; } .state-claimed { background: #fff3c4; } .state-running { background: #d7f5dd; }
  .state-recovering { background: #ffe0cc; } .state-settled { background: #e3e8ff; }
  .muted { color: var(--muted); }
  .error-text { color: #b00020; }
  .travel { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; margin: .5rem 0; }
  .travel input[type=range] { flex: 1 1 16rem; min-width: 12rem; }
  .stage { display: grid; grid-template-columns: minmax(0, 1fr); gap: 1rem; align-items: start; margin: .5rem 0; }
  #chart { margin: 0; border: 1px solid var(--line); border-radius: 8px; background: #fff; overflow: auto; max-height: 44rem; }
  #chart svg { display: block; width: 100%; height: auto; margin: 0 auto; }
  .columns { display: grid; grid-template-columns: minmax(18rem, 2fr) 3fr; gap: 1rem; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .75rem; margin: 0; }
  dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
  .lease-live { color: #137333; font-weight: 600; } .lease-expired { color: #b3261e; font-weight: 600; } .lease-ended { color: var(--muted); font-weight: 600; }
  .rows { overflow-x: auto; } .rows h4 { margin: .6rem 0 .2rem; }
  .rows table { width: auto; margin-bottom: .5rem; font-size: .8rem; } .rows td, .rows th { white-space: nowrap; }
  .prompt-parts { margin: 0; padding-left: 1rem; }
  #sessions { font-size: .9rem; } #sessions td { overflow-wrap: anywhere; }
  #sessions .meta { display: block; font-size: .8rem; color: var(--muted); }
  #sessions .state { white-space: nowrap; } #sessions td.tags { font-size: .8rem; }
  #sessions td.tags span { display: inline-block; margin: 0 .35rem .1rem 0; }
  #timeline-wrap { position: relative; max-height: 28rem; overflow: auto; }
  #timeline thead th { position: sticky; top: 0; background: #fff; z-index: 1; }
  #timeline td.payload { max-width: 30rem; overflow-wrap: anywhere; }
  .filters { display: flex; flex-wrap: wrap; gap: .35rem .6rem; align-items: end; margin: 0 0 .4rem; font-size: .85rem; }
  .filters label { display: flex; flex-direction: column; color: var(--muted); }
  .filters input { font: inherit; padding: .15rem .3rem; border: 1px solid var(--line); border-radius: 5px; }
  #timeline-status { font-size: .8rem; margin: .2rem 0; }
  #error:not(:empty) { margin: 0 1.25rem; padding: .5rem .75rem; border: 1px solid #b3261e; border-radius: 6px; color: #b3261e; background: #fdecea; }
  #conversation h3 { margin-top: 0; }
  #conversation-wrap { position: relative; max-height: 40rem; overflow: auto; border: 1px solid var(--line); border-radius: 8px; padding: .3rem .5rem; background: #fcfcfd; }
  #conversation-entries { list-style: none; margin: 0; padding: 0; }
  .conv-live { margin: .4rem 0; padding: .3rem .5rem; border-left: 3px solid #137333; white-space: pre-wrap; }
  .conv { margin: .35rem 0; padding: .35rem .55rem; border-radius: 8px; border: 1px solid var(--line); background: #fff; }
  .conv[aria-current="true"] { outline: 2px solid var(--accent); outline-offset: 1px; }
  .conv-prompt { background: #eef3fd; border-color: #c6d5f5; margin-left: 2rem; }
  .conv-prompt.conv-recovery { background: #fff6e5; border-color: #f0d9a8; }
  .conv-prompt.conv-dropped, .conv-prompt.conv-queued { background: #f4f4f5; border-style: dashed; }
  .conv-turn, .conv-fork { border: none; background: none; padding: .1rem .2rem; font-size: .8rem; color: var(--muted); border-top: 1px dashed var(--line); border-radius: 0; }
  .conv-recovery-entry, .conv-compaction, .conv-wait { background: #fafafa; font-size: .85rem; }
  .conv-head { display: flex; flex-wrap: wrap; gap: .2rem .5rem; align-items: baseline; font-size: .8rem; color: var(--muted); }
  .conv-head strong { color: var(--fg); } .conv-head .mono { overflow-wrap: anywhere; }
  .conv-head .seq-link { font-size: .75rem; padding: 0 .35rem; }
  .conv-text { margin: .25rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
  .conv-reasoning { margin: .25rem 0; padding-left: .5rem; border-left: 3px solid #d0d4d9; color: var(--muted); font-style: italic; white-space: pre-wrap; overflow-wrap: anywhere; }
  .conv-tool { margin: .3rem 0; padding: .3rem .45rem; border: 1px solid var(--line); border-radius: 6px; background: #fbfbfb; font-size: .85rem; }
  .conv-tool pre { margin: .15rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
  .conv-tool[data-state="failed"], .conv-tool[data-state="denied"] { border-color: #e8b4b0; background: #fdf3f2; }
  .conv-tool[data-state="awaiting_approval"] { border-color: #f0d9a8; background: #fff8e6; }
  .cut { color: #8a5a00; font-size: .8rem; font-style: normal; }
  .conv-note { font-size: .8rem; color: var(--muted); margin: .15rem 0; }
  .conv-answer { margin: .25rem 0 0; padding: .2rem .5rem; border-left: 3px solid #c6d5f5; }
  .tree { margin: .25rem 0 .5rem; font-size: .9rem; } .tree a { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
  @media (max-width: 60rem) { main, .columns, .stage { grid-template-columns: 1fr; } }
`;

export function inspectorPage(options: { logName: string; writes?: boolean }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sessiond inspector</title>
<style>${css}</style>
</head>
<body>
<header>
  <h1>sessiond inspector</h1>
  <span class="muted">log <code id="log-name" data-testid="log-name">${escapeHtml(options.logName)}</code></span>
  <span class="muted">updates: <span id="live-status" data-testid="live-status" role="status">connecting</span></span>
  <span class="muted" id="indexing" data-testid="indexing" role="status" hidden></span>
</header>
<div id="error" data-testid="error" role="alert"></div>
<main>
  <section class="panel" id="sessions-panel" aria-labelledby="sessions-heading">
    <h2 id="sessions-heading">Sessions</h2>
    <form id="list-filters" data-testid="list-filters" class="filters" aria-label="Filter the sessions"${options.writes ? '' : ' hidden'}>
      <label>State <select id="list-state" data-testid="list-state"><option value="">any</option>${['idle', 'claimed', 'running', 'recovering', 'settled'].map((s) => `<option>${s}</option>`).join('')}</select></label>
      <label>Waiting <select id="list-waiting" data-testid="list-waiting"><option value="">either</option><option value="1">waiting</option><option value="0">not waiting</option></select></label>
      <label>Tag <input id="list-tag" data-testid="list-tag" placeholder="key=value" size="12" autocomplete="off"></label>
      <label>Id starts with <input id="list-prefix" data-testid="list-prefix" placeholder="cust-42:" size="10" autocomplete="off"></label>
      <button type="submit" data-testid="list-apply">List</button>
    </form>
    <table id="sessions" data-testid="sessions">
      <caption class="muted" style="caption-side: bottom; text-align: left; padding-top: .4rem">Live state, folded from the log; pick one to inspect it.</caption>
      <thead><tr><th scope="col">Session</th><th scope="col">State</th><th scope="col">Tags</th></tr></thead>
      <tbody></tbody>
    </table>
    <button type="button" id="list-more" data-testid="list-more" hidden>More sessions</button>
    <p id="no-sessions" data-testid="no-sessions" class="muted" hidden>No sessions in this log yet. Admit a prompt, e.g. <code>npx sessiond prompt ses_demo "hello"</code>.</p>
  </section>
  <section class="panel" id="session-detail" data-testid="session-detail" aria-labelledby="session-heading">
    <h2 id="session-heading">Session <code id="session-id" data-testid="session-id">(none selected)</code></h2>
    <p id="pick-hint" class="muted">Pick a session on the left to see its state chart, its conversation, its timeline and time travel.</p>
    <div id="session-body" hidden>
      <p>Now: <span id="current-state" data-testid="current-state" class="state"></span> at sequence <span id="current-seq" data-testid="current-seq"></span> <span id="current-capacity" data-testid="current-capacity" class="state state-waiting" hidden></span></p>
      <p id="session-tree" data-testid="session-tree" class="tree" hidden></p>
      <div class="travel">
        <label for="seq-slider">Time travel to sequence <output id="seq-value" data-testid="seq-value" for="seq-slider">0</output> of <span id="seq-max" data-testid="seq-max">0</span></label>
        <input type="range" id="seq-slider" data-testid="seq-slider" min="0" max="0" step="1" value="0">
        <button type="button" id="follow-live" data-testid="follow-live" aria-pressed="true">Follow live</button>
        <button type="button" id="chart-commands" data-testid="chart-commands" aria-pressed="false" title="draw each state's commands with their guards and refusals">Commands and refusals</button>
        <span id="fork-controls"${options.writes ? '' : ' hidden'}><label>Fork here into <input id="fork-id" data-testid="fork-id" placeholder="new session id" size="14" autocomplete="off"></label>
        <button type="button" id="fork-here" data-testid="fork-here" title="a new session with this session's conversation up to this sequence">Fork here</button>
        <span id="fork-result" data-testid="fork-result" role="status"></span></span>
      </div>
      <div class="stage">
        <figure id="chart" data-testid="chart" aria-label="State chart of the session machine" role="img"></figure>
        <section id="conversation" data-testid="conversation" aria-labelledby="conversation-heading">
          <h3 id="conversation-heading">Conversation at sequence <span id="conversation-seq" data-testid="conversation-seq"></span></h3>
          <p id="conversation-status" data-testid="conversation-status" class="muted conv-note" aria-live="polite"></p>
          <div id="conversation-wrap" data-testid="conversation-wrap">
            <button type="button" id="conversation-earlier" data-testid="conversation-earlier" hidden>Earlier entries</button>
            <ol id="conversation-entries" data-testid="conversation-entries"></ol>
            <div id="conversation-queued" data-testid="conversation-queued"></div>
            <div id="conversation-live" data-testid="conversation-live" class="conv-live" aria-live="polite" hidden></div>
          </div>
        </section>
      </div>
      <div class="columns">
        <section aria-labelledby="at-heading" id="at" data-testid="at" aria-live="polite">
          <h3 id="at-heading">At sequence <span id="at-seq" data-testid="at-seq"></span>: <span id="at-state" data-testid="at-state" class="state"></span></h3>
          <p id="at-event" data-testid="at-event" class="mono"></p>
          <h4>Lease</h4>
          <dl id="at-lease" data-testid="at-lease"></dl>
          <h4>Pending inputs</h4>
          <ul id="at-pending" data-testid="at-pending"></ul>
          <h4>Waits for</h4>
          <ul id="at-waits" data-testid="at-waits"></ul>
          <h4>Tokens</h4>
          <p id="at-usage" data-testid="at-usage" class="mono"></p>
          <h4>Budget</h4>
          <p id="at-budget" data-testid="at-budget" class="mono"></p>
          <details><summary>Context (the machine's folded context)</summary><pre id="at-context" data-testid="at-context"></pre></details>
        </section>
        <section aria-labelledby="timeline-heading">
          <h3 id="timeline-heading">Timeline</h3>
          <form id="timeline-filters" data-testid="timeline-filters" class="filters" aria-label="Jump and filter the timeline">
            <label>Jump to seq <input id="jump-seq" data-testid="jump-seq" inputmode="numeric" size="7" autocomplete="off"></label>
            <label>or time <input id="jump-time" data-testid="jump-time" placeholder="ISO time or ms" size="16" autocomplete="off"></label>
            <label>Type <input id="filter-type" data-testid="filter-type" list="event-types" placeholder="all (tool.* for a family)" size="18" autocomplete="off"></label>
            <label>Text in payload <input id="filter-q" data-testid="filter-q" type="search" size="14" autocomplete="off"></label>
            <button type="submit" data-testid="filter-apply">Go</button>
            <button type="button" id="filter-clear" data-testid="filter-clear">Clear</button>
          </form>
          <datalist id="event-types">${durableEventTypes.map((t) => `<option value="${escapeHtml(t)}">`).join('')}</datalist>
          <p id="timeline-status" data-testid="timeline-status" class="muted" aria-live="polite"></p>
          <div id="timeline-wrap" data-testid="timeline-wrap">
            <table id="timeline" data-testid="timeline">
              <thead><tr><th scope="col">Seq</th><th scope="col">Time (UTC)</th><th scope="col">Event</th><th scope="col">Payload</th></tr></thead>
              <tbody></tbody>
            </table>
          </div>
        </section>
      </div>
      <section aria-labelledby="rows-heading">
        <h3 id="rows-heading">Rows at sequence <span id="rows-seq" data-testid="rows-seq"></span> <span class="muted">(the projector's tables, folded from the log up to this sequence)</span></h3>
        <div id="at-rows" data-testid="at-rows" class="rows"></div>
      </section>
    </div>
  </section>
</main>
<script>${conversationView}
${client}</script>
</body>
</html>
`;
}
