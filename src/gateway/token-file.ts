/**
 * A tokens file kept current: read again when it changes (watched-file.ts), so a token removed from
 * it stops working within seconds and a new one starts; a file that stops parsing keeps the tokens
 * read before, and says why.
 */
import { readFileSync } from 'node:fs';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import { parseTokens, type TokenTable } from './tokens.ts';
import { watchFile, type WatchedFileOptions } from './watched-file.ts';

export interface ReloadingTokenTable extends TokenTable {
  close(): void;
}

export interface TokenFileOptions extends Omit<WatchedFileOptions, 'onError'> {
  /** A change was read (`tokens`: how many), or a changed file was refused (`error`). */
  onReload?: (outcome: { tokens: number } | { error: string }) => void;
}

/** The tokens of `path`, now and as the file changes. Throws (with what was wrong) when it cannot be read or parsed now. */
export function tokenFile(path: string, options: TokenFileOptions = {}): ReloadingTokenTable {
  const report = options.onReload ?? (() => {});
  let table: TokenTable | undefined;
  const watched = watchFile(
    path,
    (text) => {
      try {
        table = parseTokens(text, path);
        report({ tokens: table.size });
      } catch (err) {
        report({ error: `${messageOf(err)} The gateway keeps the ${table?.size ?? 0} tokens it had.` });
      }
    },
    { ...options, onError: (error) => report({ error }) },
  );
  try {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new SessiondError(ErrorCode.InvalidOption, `--tokens ${path}: cannot read it (${messageOf(err)}).`);
    }
    table = parseTokens(text, path);
  } catch (err) {
    watched.close();
    throw err;
  }
  return {
    get size() {
      return table!.size;
    },
    find: (presented) => table!.find(presented),
    close: () => watched.close(),
  };
}
