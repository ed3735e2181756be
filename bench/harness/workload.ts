/** The shape every bench/workloads/*.ts file exports. */
export interface RunContext {
  /** `--quick`: a tenth of the sizes and durations, for trying the bench out. */
  quick: boolean;
  /** Picks the full or the quick value. */
  size(full: number, quick: number): number;
  /** A database name of this run, `bench_<part>`. */
  database(part: string): string;
  /** Results of the workloads that already ran in this run, by name. */
  previous: Record<string, any>;
}

export interface Workload<R = any> {
  name: string;
  title: string;
  /** Left out of the default set; runs only when named in --only (long runs such as the soak). */
  optIn?: boolean;
  run(ctx: RunContext): Promise<R>;
  /** The workload's section of latest.md. */
  markdown(result: R): string;
}
