// STUB for wiring; replaced by branch cap's gate.ts at merge
export interface CallRequest {
  sessionId: string;
  executionId: string;
  tenant: string | null;
  provider: string;
  model: string;
}
export interface CallSlot {
  release(): Promise<void>;
  throttled(retryAfterMs: number | undefined): Promise<void>;
}
export interface WaitingCall {
  sessionId: string;
  executionId: string;
  tenant: string | null;
  scopes: string[];
  since: number;
}
export interface CapacityView {
  limits: { scope: string; limit: number; inFlight: number; waiting: number }[];
  waiting: WaitingCall[];
  backoff: { provider: string; until: number; level: number }[];
  workers: { ownerId: string; expiresAt: number }[];
}
export interface ModelCallGate {
  acquire(request: CallRequest, signal: AbortSignal, onWait?: (w: WaitingCall) => void): Promise<CallSlot>;
  view(): Promise<CapacityView>;
  close(): Promise<void>;
}
