/** Go doc comments of the command reply types (the Python client's are in protocol-python-replies.ts). */
export const goReplyDocs: Record<string, string> = {
  UploadReply: 'UploadReply is the upload reply: Received, the bytes taken so far; Blob, on the last chunk, the reference a prompt part carries.',
  BlobChunk: 'BlobChunk is the blob reply: Data, the bytes from Offset (at most 512 KiB), of the blob of Size bytes and MediaType; More when bytes follow.',
  AdmitReceipt:
    'AdmitReceipt is the admit reply. Created is false when the input id was admitted before (true when an earlier attempt of the same call admitted it).',
  WakeResult:
    'WakeResult is the wake reply: Status started or running_here (ExecutionID), nothing_pending, refused (Reason, Message), failed (Code, Message) or closed (the worker is shutting down).',
  CancelResult: "CancelResult is the cancel reply: Cancelled with the ExecutionID, or not, with the refusal's Reason (e.g. nothing_to_cancel) and Message.",
  DropResult:
    'DropResult is the drop reply: the inputs dropped (empty when nothing matching was pending) and the seq of the input.dropped event (0 when nothing was dropped).',
  ResolveResult:
    "ResolveResult is the resolve reply. Resolved is false when the wait had already ended so (the same decision sent again, by this call's earlier attempt or another call): nothing changed. ResumeInputID is the input that resumes the turn, when this was its last open wait; Seq the seq of the wait.resolved event (0 when nothing changed).",
  Status:
    "Status is the status reply: the session as the worker that answered sees it in the log. Outcome is how the last execution ended (succeeded, failed, released, waiting, cancelled; nil while it runs or before any); the session waits when it is waiting and one of Waits is open. Tags are the session's tags (empty when it has none); ForkedFrom is the source and seq of a fork (nil when the session is not one). OwnedBy is who the session belongs to (fixed by its first admission; nil when no one); Owner is the worker holding the turn's lease. TenantBudget is the budget of the session's tenant (OwnedBy), when it has one.",
  PendingInput:
    "PendingInput is one pending input of a status (without its prompt). NotBefore: a scheduled prompt's time (ms since the epoch), before which no turn takes it; Tags: those its admission gave the session.",
  Wait: "Wait is one wait of the session's turn, open (Outcome nil) or resolved in this turn: Kind approval (a person's decision on the call CallID of message MessageID, tool Tool with Input, run with IdempotencyKey when Durable; Started once an approved call has started: it never runs twice), signal (a value from outside, Data once delivered) or timer; Name is its key within the turn (the call id, the signal's name, sleep-N). Since: when the turn started to wait; Until: a timer's time or a signal's timeout. Outcome approved, denied, delivered, timed_out, elapsed or cancelled, at ResolvedAt, with a person's Reason.",
  EventRef: 'EventRef is where a committed event is in the log.',
  ExecutionState: "ExecutionState is a status's current or last execution (Outcome nil while it runs; else succeeded, failed, released, waiting or cancelled).",
  OpenTool: 'OpenTool is a journaled tool call not yet settled.',
  RecoveryState: "RecoveryState is a status's recovery in progress, if any.",
  Spend: "Spend is what a session has spent since its budget's latest reset: tokens (input + output) and US dollars (priced calls only).",
  Budget: "Budget is a session's budget: its limits (nil: none) and its spend since the latest reset.",
  TenantBudget:
    "TenantBudget is a tenant's budget, as a session's Status shows it: what all of the tenant's sessions may spend together (nil: no limit), what they spent since Since (ms since the epoch: the budget set first, or its latest reset). The admin sets it: sessiond budget --tenant T.",
  BudgetResult:
    "BudgetResult is a session's budget after a Budget call (Budget nil: none set), its spend, its usage totals, and whether a budget.set event was written (Seq, its sequence).",
  TagResult:
    "TagResult is the tag reply: the session's tags after the change; Changed false when it had them already (nothing was written: a resend of a change an earlier attempt made answers so too); Seq the seq of the session.tagged event (0 when nothing changed).",
  SessionListItem:
    "SessionListItem is a session in a list page: what the worker's projection knows of it (Status has the whole of it, from the log). PendingInputs: inputs admitted and not yet run nor dropped; Seq: its last event's; CreatedAt, UpdatedAt: the times of its first and last events (ms since the epoch); ForkedFrom: where it was forked from (nil when it is not a fork); OwnedBy: who it belongs to (nil when no one); CalledBy: the session whose turn last called it, its parent (nil when none has); ChildCount: the sessions whose CalledBy is this one.",
  ForkResult:
    "ForkResult is the fork reply. From: the source and the seq the fork holds the conversation up to; Seq: the seq of the new session's session.forked (1); Items: how many conversation items it starts with. Created is false when the same fork was made before (the same source, and the same At when given): nothing was written, and Items is 0. As in the Node client, a call whose first attempt went unanswered and whose resend found the fork that attempt made answers so too.",
  Capacity: "Capacity is what the answering worker's capacity limits allow (Since: when it counted from) and how much of each is in use.",
  CapacityLimit: 'CapacityLimit is one capacity limit: its Scope, its Limit, the turns InFlight under it and those Waiting for room.',
};
