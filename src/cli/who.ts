/** Who runs a command (`user@host`): the default `--by` of delete, approve, deny, resolve and cancel, recorded as the actor. */
import { hostname, userInfo } from 'node:os';

export const whoAmI = (): string => {
  try {
    return `${userInfo().username}@${hostname()}`.slice(0, 200);
  } catch {
    return `uid ${process.getuid?.() ?? '?'}@${hostname()}`.slice(0, 200);
  }
};

export const BY_OPTION = ['--by <who>', 'who does it (recorded as the actor in the event; default user@host)'] as const;
