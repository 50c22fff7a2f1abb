// The import graph's cycle check, on its own: which new edge closes a cycle.
import t from 'tap';
import { closesCycle } from '../../../server/domain/secretImports.js';
import type { ImportEdge } from '../../../storage/secretImports.js';

const edge = (id: string, from: [string, string], to: [string, string]): ImportEdge => ({
  id,
  folderId: `f-${id}`,
  environmentId: from[0],
  path: from[1],
  importEnvId: to[0],
  importPath: to[1],
});
const at = (environmentId: string, path: string) => ({ environmentId, path });

t.test('closesCycle', async (t) => {
  // prod / imports staging /shared, which imports dev /base.
  const edges = [edge('1', ['prod', '/'], ['staging', '/shared']), edge('2', ['staging', '/shared'], ['dev', '/base'])];
  t.notOk(closesCycle(edges, at('prod', '/'), at('dev', '/other')), 'a new leaf');
  t.notOk(closesCycle(edges, at('prod', '/'), at('dev', '/base')), 'a second path to the same source is no cycle');
  t.ok(closesCycle(edges, at('staging', '/shared'), at('prod', '/')), 'two steps');
  t.ok(closesCycle(edges, at('dev', '/base'), at('prod', '/')), 'three steps');
  t.ok(closesCycle(edges, at('prod', '/'), at('prod', '/')), 'itself');
  t.notOk(closesCycle(edges, at('dev', '/base'), at('prod', '/'), '2'), 'without the edge being re-pointed, none');
  t.notOk(closesCycle(edges, at('dev', '/base'), at('prod', '/app')), 'a path is not its sub-folders');
  t.notOk(closesCycle(edges, at('prod', '/'), at('staging', '/')), 'another environment at the same path is another folder');
  // A cycle already in the graph (made by a rename) does not loop the check.
  const looped = [edge('a', ['x', '/'], ['y', '/']), edge('b', ['y', '/'], ['x', '/'])];
  t.notOk(closesCycle(looped, at('z', '/'), at('x', '/')), 'terminates on an existing cycle');
});
