import type { Sql } from '../store/sql.js';
import { reserveNoteIds } from './attempt-statements.js';
import { NOTE_ID_BLOCK } from '../context/tuning.js';


/**
 * Attempt note ids, taken from delay_attempt's sequence a block at a time.
 * A claim knows its note's id before sending the message that writes the
 * note, so the claim statement can ride in that message, and a failure of
 * that message still knows which note to forget. Ids never go back: one
 * taken and unused is a gap in the sequence, as a rolled-back insert leaves.
 */
export class NoteIds {
  private ids: string[] = [];
  private refill: Promise<void> | undefined;

  async take(sql: Sql): Promise<string> {
    while (this.ids.length === 0) {
      // Claims that run out at once share one reservation.
      this.refill ??= reserveNoteIds(sql, NOTE_ID_BLOCK)
        .then((ids) => {
          this.ids.push(...ids);
        })
        .finally(() => {
          this.refill = undefined;
        });
      await this.refill;
    }
    return this.ids.shift() as string;
  }
}
