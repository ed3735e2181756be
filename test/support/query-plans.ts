/** A node of a plan from EXPLAIN (FORMAT JSON), with the fields plan tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

/** Every node of a plan that reads `relation` itself. */
export function tableReads(node: PlanNode, relation = 'delayed_task'): PlanNode[] {
  const own = node['Relation Name'] === relation ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap((child) => tableReads(child, relation))];
}
