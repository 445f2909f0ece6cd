/** Writes an export file of `n` realistic events (not timed: the setup of the replay figures). */
import { ExportWriter } from '../../src/export/export-file.ts';
import { corpus, pages, shapeFor, withPositions, type Template } from './corpus.ts';

export async function writeExportCorpus(template: Template, file: string, n: number, onProgress?: (done: number) => void): Promise<number> {
  const writer = await ExportWriter.create(file, { created: Date.now(), source: 'sessiond bench corpus', events: n });
  let written = 0;
  try {
    for (const page of pages(withPositions(corpus(template, shapeFor(template, n))), 1000)) {
      const take = page.slice(0, n - written);
      if (take.length === 0) break;
      await writer.write(take);
      written += take.length;
      onProgress?.(written);
      if (written >= n) break;
    }
  } finally {
    await writer.close();
  }
  return written;
}
