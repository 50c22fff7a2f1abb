// The UI's .env parser (ui/src/dotenv.ts) against the dotenv package's own parse, on the
// cases of dotenv's README rules and tests (motdotla/dotenv tests/.env and tests/.env.multiline,
// written out here), plus what only the paste box reports (unreadable lines, repeated keys).
import dotenv from 'dotenv';
import t from 'tap';
import { parseDotenv } from '../../ui/src/dotenv.js';

const CASES = `BASIC=basic

# previous line intentionally left blank
AFTER_LINE=after_line
EMPTY=
EMPTY_SINGLE_QUOTES=''
EMPTY_DOUBLE_QUOTES=""
EMPTY_BACKTICKS=\`\`
SINGLE_QUOTES='single_quotes'
SINGLE_QUOTES_SPACED='    single quotes    '
DOUBLE_QUOTES="double_quotes"
DOUBLE_QUOTES_SPACED="    double quotes    "
DOUBLE_QUOTES_INSIDE_SINGLE='double "quotes" work inside single quotes'
DOUBLE_QUOTES_WITH_NO_SPACE_BRACKET="{ port: $MONGOLAB_PORT}"
SINGLE_QUOTES_INSIDE_DOUBLE="single 'quotes' work inside double quotes"
BACKTICKS_INSIDE_SINGLE='\`backticks\` work inside single quotes'
BACKTICKS_INSIDE_DOUBLE="\`backticks\` work inside double quotes"
BACKTICKS=\`backticks\`
BACKTICKS_SPACED=\`    backticks    \`
DOUBLE_QUOTES_INSIDE_BACKTICKS=\`double "quotes" work inside backticks\`
SINGLE_QUOTES_INSIDE_BACKTICKS=\`single 'quotes' work inside backticks\`
DOUBLE_AND_SINGLE_QUOTES_INSIDE_BACKTICKS=\`double "quotes" and single 'quotes' work inside backticks\`
EXPAND_NEWLINES="expand\\nnew\\nlines"
DONT_EXPAND_UNQUOTED=dontexpand\\nnewlines
DONT_EXPAND_SQUOTED='dontexpand\\nnewlines'
# COMMENTS=work
INLINE_COMMENTS=inline comments # work #very #well
INLINE_COMMENTS_SINGLE_QUOTES='inline comments outside of #singlequotes' # work
INLINE_COMMENTS_DOUBLE_QUOTES="inline comments outside of #doublequotes" # work
INLINE_COMMENTS_BACKTICKS=\`inline comments outside of #backticks\` # work
INLINE_COMMENTS_SPACE=inline comments start with a#number sign. no space required.
EQUAL_SIGNS=equals==
RETAIN_INNER_QUOTES={"foo": "bar"}
RETAIN_INNER_QUOTES_AS_STRING='{"foo": "bar"}'
RETAIN_INNER_QUOTES_AS_BACKTICKS=\`{"foo": "bar's"}\`
TRIM_SPACE_FROM_UNQUOTED=    some spaced out string
USERNAME=therealnerdybeast@example.tld
    SPACED_KEY = parsed
export EXPORTED=yes
COLON: colon value
A_PEM="-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASC
-----END PRIVATE KEY-----"
MULTI_SINGLE_QUOTED='THIS
IS
A
MULTILINE
STRING'
MULTI_BACKTICKED=\`THIS
IS
A
"MULTILINE'S"
STRING\`
AFTER_MULTI=after
ESCAPED_QUOTE="say \\"hi\\" there"
DOLLAR=$NOT_EXPANDED
URL=postgres://user:p@ss@host:5432/db?sslmode=require
`;

t.test('the same answer as dotenv.parse on its cases', async (t) => {
  const ours = parseDotenv(CASES);
  t.same(ours.errors, []);
  t.same(Object.fromEntries(ours.entries.map((e) => [e.key, e.value])), dotenv.parse(CASES));
  t.equal(ours.entries.length, Object.keys(dotenv.parse(CASES)).length);
  // The review's case: a comment after an unquoted value is not part of it.
  t.same(parseDotenv('A=1 # comment').entries, [{ key: 'A', value: '1' }]);
  t.same(parseDotenv('WIN=crlf\r\nNEXT=x\r\n').entries, [{ key: 'WIN', value: 'crlf' }, { key: 'NEXT', value: 'x' }]);
});

t.test('each case line alone gives what dotenv gives', async (t) => {
  for (const line of CASES.split('\n').filter((l) => /^\s*(export\s+)?[\w.-]+\s*[=:]/.test(l) && !/^(A_PEM|MULTI_)/.test(l))) {
    t.same(Object.fromEntries(parseDotenv(line).entries.map((e) => [e.key, e.value])), dotenv.parse(line), line);
  }
});

t.test('what the paste box reports besides', async (t) => {
  const r = parseDotenv('GOOD=1\nnot a pair\nGOOD=2\n  \n# fine\nALSO=ok');
  t.same(r.entries, [{ key: 'GOOD', value: '1' }, { key: 'ALSO', value: 'ok' }]);
  t.same(r.errors, ['Line 2: expected KEY=value', 'Line 3: GOOD appears twice']);
  const multi = parseDotenv('M="a\nb\nc"\nBAD LINE\n');
  t.same(multi.errors, ['Line 4: expected KEY=value'], 'line numbers count the lines a quoted value spans');
});
