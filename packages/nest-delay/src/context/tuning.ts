/**
 * The runtime's tuning constants; what each trades is said beside it. Bounds
 * a caller sees (options, API limits) and the pure wheel's and clock's own
 * sizes live with them instead.
 */

/** Entries the tick driver hands out per event-loop task: a big burst starts its first claims before the rest is handed out. */
export const HANDOUT = 1000;

/** Heartbeats between two releases of tasks leased to instances that have no lease row (releaseLeasesOfMissingInstances). */
export const MISSING_INSTANCE_SWEEP_EVERY = 6;

/** How long a handler gets after its signal aborts before its claim is cut off. */
export const CUT_OFF_GRACE_MS = 1000;

/** A claim's statement_timeout and idle_in_transaction_session_timeout sit this far above the longest handler timeout plus grace: a backstop for a frozen process only. */
export const BACKSTOP_MARGIN_MS = 10_000;

/** A claim that failed as a whole (the database unreachable) is retried after a tick, never sooner than this. */
export const FAILED_CLAIM_RETRY_MIN_MS = 1000;

/**
 * At stop, the attempt notes of cut-off claims are deleted once the server has
 * ended their sessions: tried this many times, this far apart. A note still
 * locked then (its backend still in a long statement) stays, to be charged later.
 */
export const FORGET_STOPPED_TRIES = 10;
export const FORGET_STOPPED_INTERVAL_MS = 100;

/** The stranded sweep looks at this instance's tasks overdue by more than this: any task on its way is held well within it. */
export const STRANDED_MARGIN_MS = 1000;
/** Tasks the stranded sweep reads per round; a longer overdue list is read over several rounds. */
export const STRANDED_PAGE = 1000;

/** Rows one prune statement deletes: few locks, kept for a few milliseconds. */
export const PRUNE_BATCH = 1000;

/** After each full prune batch the pruner rests this many times as long as it took: a quarter of the database's time at most. */
export const PRUNE_REST_PER_BATCH = 3;

/** Readings of the database's clock at start, before anything is leased: the correction starts from the shortest round trip. */
export const START_CLOCK_SAMPLES = 3;

/** A correction of the system clock this large is logged: the host's clock needs attention. */
export const CLOCK_CORRECTION_ALARM_MS = 2_000;

/** Schedules one planning transaction locks at most; a full page is followed by another. */
export const SCHEDULES_PER_PLAN = 100;

/**
 * A gate's claim takes no next task once it has run this long (real time):
 * its transaction, which holds its tasks' row locks, its seat and the xmin
 * horizon, outlives this by at most one handler's run.
 */
export const GATE_CLAIM_MAX_MS = 1000;
/**
 * Tasks the limit gate holds in memory, in pages of a full claim round
 * (batchSize × concurrency): those beyond stay in the table, and are read
 * again, by type, once the gate has room (LimitGate.refill).
 */
export const GATE_CAPACITY_PAGES = 4;
/** The gate holds at least this many tasks, however small the pages. */
export const GATE_CAPACITY_MIN = 1000;
/**
 * A limit's line whose seats are all held by other instances claims again
 * after this, doubling up to LIMIT_BUSY_MAX_RETRY_MS. Its own claims ending wake it at once.
 */
export const LIMIT_BUSY_FIRST_RETRY_MS = 10;
export const LIMIT_BUSY_MAX_RETRY_MS = 1000;
/** How often the limits table is read while tasks wait behind a limit or a pause (a resume elsewhere is seen within this). */
export const LIMIT_REFRESH_MS = 1000;
/** A line with no concurrency limit (a rate, a pause) is spread over this many claims at once. */
export const GATE_SPREAD = 4;
/** Rate credits unused this long are deleted by the pruner (per-key limits would keep `starts` rows per key forever). */
export const CREDIT_KEEP_MS = 24 * 3_600_000;

/** After start, how long before the runtime looks for a SIGTERM handler (shutdownHooksMissing). */
export const SHUTDOWN_HOOKS_CHECK_MS = 5_000;

/** Tries of one write marking a batch of rate credits used (at their starts) before they are left in flight. */
export const STAMP_TRIES = 5;

/** The first wait before a schedule whose plan failed is tried again. */
export const PLAN_RETRY_FIRST_MS = 60_000;
/** The longest wait between two tries of a failed plan. */
export const PLAN_RETRY_MAX_MS = 3_600_000;

/** Tasks handed back at stop in one statement (earliest due first), so other instances take them as it goes. */
export const HAND_BACK_STEP = 1000;

/** How many of the oldest overdue unleased tasks are looked at for types no live instance runs. */
export const UNHANDLED_SAMPLE = 1000;

/** Attempt note ids reserved at a time: one extra round trip every this many claims. */
export const NOTE_ID_BLOCK = 64;
