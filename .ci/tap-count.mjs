// Counts leaf assertions in raw TAP (stdin): a test point that closes a subtest
// (preceded by deeper-indented lines) is a summary, not an assertion.
// Prints "N passed, N failed" and exits 1 when any failed or none ran.
import { createInterface } from 'node:readline';

let passed = 0;
let failed = 0;
let todoOrSkip = 0;
let prevIndent = -1;
const rl = createInterface({ input: process.stdin });
for await (const raw of rl) {
  const line = raw.replace(/\r$/, '');
  const m = /^(\s*)(not ok|ok)\b(.*)$/.exec(line);
  if (m) {
    const indent = m[1].length;
    const isSummary = prevIndent >= indent + 4;
    if (!isSummary) {
      if (/#\s*(SKIP|TODO)\b/i.test(m[3])) todoOrSkip++;
      else if (m[2] === 'ok') passed++;
      else failed++;
    }
    prevIndent = indent;
    continue;
  }
  // Only plans move the marker: a subtest ends with its plan (or points) at indent+4;
  // YAML diagnostics and comments belong to no point.
  const plan = /^(\s*)1\.\.\d+/.exec(line);
  if (plan) prevIndent = plan[1].length;
}
console.log(`${passed} passed, ${failed} failed${todoOrSkip ? `, ${todoOrSkip} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
