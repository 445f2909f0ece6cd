import { ErrorCode, SessiondError } from '../errors.ts';
import type { CommandType, Refusal } from '../machines/commands.ts';

/** The session machine refused a command; `reason` is a stable `Refusal` string. */
export class CommandRefusedError extends SessiondError {
  readonly reason: Refusal;
  readonly command: CommandType;
  readonly sessionId: string;
  constructor(sessionId: string, command: CommandType, reason: Refusal, message: string) {
    super(ErrorCode.CommandRefused, `${command} refused for session ${sessionId} (${reason}): ${message}`, { details: { sessionId, command, reason } });
    this.name = 'CommandRefusedError';
    this.reason = reason;
    this.command = command;
    this.sessionId = sessionId;
  }
}

/** The owner no longer holds its claim: the runner must stop. The message is the seed's defect text. */
export class ClaimLostError extends SessiondError {
  readonly executionId: string;
  constructor(executionId: string, cause?: unknown) {
    super(ErrorCode.ClaimLost, `Session execution claim lost: ${executionId}`, { cause, details: { executionId } });
    this.name = 'ClaimLostError';
    this.executionId = executionId;
  }
}

export function isRefusal(err: unknown, ...reasons: Refusal[]): err is CommandRefusedError {
  return err instanceof CommandRefusedError && (reasons.length === 0 || reasons.includes(err.reason));
}
