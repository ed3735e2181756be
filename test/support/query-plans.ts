/** A node of a plan from EXPLAIN (FORMAT JSON), with the fields plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** The root of a plan from a row that EXPLAIN (FORMAT JSON) returned. */
export function planRoot(row: Record<string, unknown>): PlanNode {
  return (row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
}

/** Every node of a plan that reads `relation` itself. */
export function tableReads(node: PlanNode, relation = 'delayed_task'): PlanNode[] {
  const own = node['Relation Name'] === relation ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => tableReads(child, relation))];
}

/**
 * Rows a plan read from `relation`: those each reading node returned and
 * those it read and dropped (a filter, a recheck), once per loop.
 */
export function rowsRead(node: PlanNode, relation = 'delayed_task'): number {
  return tableReads(node, relation)
    .filter((read) => read['Node Type'] !== 'ModifyTable')
    .reduce(
      (sum, read) =>
        sum +
        ((read['Actual Rows'] ?? 0) +
          (read['Rows Removed by Filter'] ?? 0) +
          (read['Rows Removed by Index Recheck'] ?? 0)) *
          (read['Actual Loops'] ?? 1),
      0,
    );
}
