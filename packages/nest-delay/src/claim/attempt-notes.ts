import { forgetAttempts, reserveNoteIds } from './attempt-statements.js';
import type { ClaimConnection, Sql } from '../store/sql.js';
import {
  FORGET_STOPPED_INTERVAL_MS,
  FORGET_STOPPED_TRIES,
  NOTE_ID_BLOCK,
} from '../context/tuning.js';

/*
 * What the claims of one instance keep in memory about their attempt notes
 * (the notes in flight and those to forget, NoteKeeper; the notes' ids,
 * NoteIds). The notes' statements are in attempt-statements.ts.
 */

/**
 * The dispatcher's book of attempt notes: which claim connection runs which
 * note, and the notes to forget. A note is forgotten (deleted uncharged)
 * when its claim ended with no task at fault: failed as a whole, or cut off
 * by a stop. While the database is unreachable a note cannot be deleted; it
 * is kept here and deleted before the next claim, so an outage does not
 * leave its tasks looking cut off.
 */
export class NoteKeeper {
  private unforgotten: string[] = [];
  /** Claim connections in use, with the note each is running (once noted). */
  private readonly connections = new Map<ClaimConnection, string | undefined>();

  lent(connection: ClaimConnection): void {
    this.connections.set(connection, undefined);
  }

  noted(connection: ClaimConnection, noteId: string): void {
    this.connections.set(connection, noteId);
  }

  returned(connection: ClaimConnection): void {
    this.connections.delete(connection);
  }

  /** Deletes the notes that could not be deleted before; keeps them if it still cannot. */
  async forgetEarlier(sql: Sql): Promise<void> {
    if (this.unforgotten.length === 0) return;
    const stale = this.unforgotten.splice(0);
    await forgetAttempts(sql, stale).catch(() => this.unforgotten.push(...stale));
  }

  /**
   * Deletes the note of a claim whose connection was just closed, once the
   * server has ended its session (until then the claim's transaction still
   * locks it); before the next claim if it cannot be deleted by then.
   */
  async forgetOnceReleased(pool: Sql, noteId: string): Promise<void> {
    const left = await forgetOnceUnlocked(pool, [noteId]);
    if (left.length > 0) this.forgetLater(noteId);
  }

  forgetLater(noteId: string): void {
    this.unforgotten.push(noteId);
  }

  /**
   * At stop: destroys every claim connection in use (their transactions roll
   * back, as a crash's would), then deletes their notes, so no attempt is
   * charged: the process chose to stop them, not their tasks.
   */
  async cutOffAll(pool: Sql): Promise<void> {
    const notes = [...this.connections.values()].filter((id): id is string => id !== undefined);
    for (const connection of this.connections.keys()) connection.cutOff();
    this.connections.clear();
    await forgetOnceUnlocked(pool, notes);
  }
}

/**
 * A note stays locked by its claim's transaction until the server has ended
 * the closed session, so this skips locked notes and tries again for a while.
 */
async function forgetOnceUnlocked(pool: Sql, notes: string[]): Promise<string[]> {
  for (let tries = 0; notes.length > 0 && tries < FORGET_STOPPED_TRIES; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, FORGET_STOPPED_INTERVAL_MS));
    const forgotten = await forgetAttempts(pool, notes).catch(() => [] as string[]);
    notes = notes.filter((id) => !forgotten.includes(id));
  }
  return notes;
}

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
