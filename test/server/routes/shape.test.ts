// The rendered list's template: filled with JSON string literals, its segments must give
// exactly the bytes JSON.stringify gives for the same answer (ESO and the SDKs read it).
import t from 'tap';
import type { SecretView } from '../../../server/domain/secrets.js';
import type { FixedText } from '../../../server/domain/secrets.js';
import { rawListText, secretRaw } from '../../../server/routes/shape.js';

const awkward = ['plain', '', 'quote " and \\ backslash', 'tab\tnew\nline', '\u0000\u0001 controls \u001f', 'snow ☃ and 𝄞', 'line sep \u2028 para \u2029', '</script>', '{"json":true}'];

function view(i: number): SecretView {
  const pick = (n: number) => awkward[(i * 7 + n) % awkward.length]!;
  return {
    id: `id-${i}-${pick(1)}`,
    projectId: `project ${pick(2)}`,
    environment: `env-${pick(3)}`,
    version: i * 3 + 1,
    key: `KEY_${i}_${pick(4)}`,
    value: pick(5),
    comment: pick(6),
    path: `/p/${pick(7)}`,
    valueHidden: false,
    skipMultilineEncoding: i % 2 === 0,
    ...(i % 5 === 0 ? { tags: [{ id: `t${i}`, slug: `s-${i}`, name: pick(8), color: i % 10 === 0 ? null : '#fff' }] } : {}),
    createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1234567),
    updatedAt: new Date(Date.UTC(2026, 10, 26) + i * 89),
  } as SecretView;
}

function fill({ text, ends }: FixedText, views: SecretView[], hasComment: boolean[]): string {
  const literals: string[] = [];
  views.forEach((v, i) => {
    literals.push(JSON.stringify(v.value));
    if (hasComment[i]) literals.push(JSON.stringify(v.comment));
  });
  t.equal(ends.length, literals.length + 1, 'one slot per value and per comment');
  t.equal(ends[ends.length - 1], text.length, 'the last segment ends the text');
  let out = '';
  ends.forEach((end, i) => {
    out += text.slice(i === 0 ? 0 : ends[i - 1], end) + (literals[i] ?? '');
  });
  return out;
}

// 600 rows: past the rows joined per piece, twice, and not a multiple of it.
for (const n of [0, 1, 2, 37, 600]) {
  t.test(`${n} secrets: the filled template is JSON.stringify's answer, byte for byte`, async (t) => {
    const views = Array.from({ length: n }, (_, i) => view(i));
    const hasComment = views.map((_, i) => i % 3 !== 1);
    // A secret without a comment answers "" (its slot is not there).
    const expected = JSON.stringify({ secrets: views.map((v, i) => secretRaw({ ...v, comment: hasComment[i] ? v.comment : '' })), imports: [] });
    t.equal(fill(rawListText(views, hasComment), views, hasComment), expected);
  });
}
