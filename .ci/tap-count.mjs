// Counts leaf assertions in raw TAP (stdin): a test point that closes a subtest
// (preceded by deeper-indented lines) is a summary, not an assertion.
// Prints each failed assertion (its subtest path and the first lines of its
// diagnostics), then "N passed, N failed" as the last line; exits 1 when any
// failed or none ran. CI keeps only the tail of the output, so the failures are
// printed here, next to the count, not only where tap reported them.
import { createInterface } from 'node:readline';

const MAX_DIAGNOSTIC_LINES = 12;
let passed = 0;
let failed = 0;
let todoOrSkip = 0;
let prevIndent = -1;
const subtests = []; // subtests[depth] = name of the open subtest at that depth
const failures = []; // { path, diagnostics: string[], indent }
let collecting = null;
const rl = createInterface({ input: process.stdin });
for await (const raw of rl) {
  const line = raw.replace(/\r$/, '');
  const indent = /^\s*/.exec(line)[0].length;
  if (collecting) {
    if (line.trim() !== '' && indent > collecting.indent && collecting.diagnostics.length < MAX_DIAGNOSTIC_LINES) {
      collecting.diagnostics.push(line.slice(collecting.indent));
      continue;
    }
    if (line.trim() === '' || indent <= collecting.indent) collecting = null;
  }
  const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
  if (subtest) {
    const depth = subtest[1].length / 4;
    subtests.length = depth;
    subtests[depth] = subtest[2];
    continue;
  }
  const m = /^(\s*)(not ok|ok)\b(.*)$/.exec(line);
  if (m) {
    const pointIndent = m[1].length;
    const isSummary = prevIndent >= pointIndent + 4;
    if (!isSummary) {
      if (/#\s*(SKIP|TODO)\b/i.test(m[3])) todoOrSkip++;
      else if (m[2] === 'ok') passed++;
      else {
        failed++;
        const path = [...subtests.slice(0, pointIndent / 4), m[3].trim()].filter(Boolean).join(' > ');
        collecting = { path, diagnostics: [], indent: pointIndent };
        failures.push(collecting);
      }
    }
    prevIndent = pointIndent;
    continue;
  }
  // Only plans move the marker: a subtest ends with its plan (or points) at indent+4;
  // YAML diagnostics and comments belong to no point.
  const plan = /^(\s*)1\.\.\d+/.exec(line);
  if (plan) prevIndent = plan[1].length;
}
for (const { path, diagnostics } of failures) {
  console.log(`FAILED: ${path}`);
  for (const d of diagnostics) console.log(`    ${d}`);
}
console.log(`${passed} passed, ${failed} failed${todoOrSkip ? `, ${todoOrSkip} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
