// A .env file as the dotenv package reads it (its README's rules), plus what a paste box
// needs that dotenv leaves out: a line it cannot read and a key given twice are reported,
// not dropped or silently overridden.
//
//   KEY=value            value trimmed; `#` starts a comment
//   KEY="a\nb"           double quotes: \n and \r become line breaks; `#` is text
//   KEY='raw'  KEY=`raw` single quotes and backticks: kept as written
//   KEY="first           quoted values may span lines, up to the closing quote
//   second"
//   export KEY=value     `export ` is ignored;  KEY: value  is KEY=value
//   # comment, blank     skipped
// test/ui/dotenv.test.ts holds this parser to dotenv's own parse on dotenv's cases.

export interface DotenvResult {
  entries: { key: string; value: string }[];
  errors: string[];
}

const KEY_START = /^[ \t]*(?:export[ \t]+)?([\w.-]+)[ \t]*(?:=|:[ \t])/;
const QUOTES = new Set(['"', "'", '`']);

/** Where the closing `quote` of a value starting at text[0] is, or -1 (a `\` before it escapes it). */
function closingQuote(text: string, quote: string): number {
  for (let j = 1; j < text.length; j++) {
    if (text[j] === '\\' && text[j + 1] === quote) {
      j++;
      continue;
    }
    if (text[j] === quote) return j;
  }
  return -1;
}

function unquoted(raw: string): string {
  let value = raw.trim();
  const first = value[0];
  if (value.length >= 2 && first !== undefined && QUOTES.has(first) && value.endsWith(first)) value = value.slice(1, -1);
  return first === '"' ? value.replace(/\\n/g, '\n').replace(/\\r/g, '\r') : value;
}

export function parseDotenv(text: string): DotenvResult {
  const src = text.replace(/\r\n?/g, '\n');
  const entries: { key: string; value: string }[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  let at = 0;
  let lineNo = 1;
  while (at < src.length) {
    let end = src.indexOf('\n', at);
    if (end < 0) end = src.length;
    const line = src.slice(at, end);
    const here = lineNo;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) {
      at = end + 1;
      lineNo++;
      continue;
    }
    const m = KEY_START.exec(line);
    if (!m) {
      errors.push(`Line ${here}: expected KEY=value`);
      at = end + 1;
      lineNo++;
      continue;
    }
    const key = m[1]!;
    const afterKey = src.slice(at + m[0].length);
    const lead = /^[ \t]*/.exec(afterKey)![0].length;
    const rest = afterKey.slice(lead);
    let value: string | undefined;
    let consumed = 0;
    if (rest[0] !== undefined && QUOTES.has(rest[0])) {
      const close = closingQuote(rest, rest[0]);
      // A closed quote followed only by blanks or a comment on its line; anything else is read unquoted, as dotenv does.
      const tail = close < 0 ? null : /^[ \t]*(?:#[^\n]*)?(?=\n|$)/.exec(rest.slice(close + 1));
      if (close >= 0 && tail) {
        value = rest.slice(1, close);
        if (rest[0] === '"') value = value.replace(/\\n/g, '\n').replace(/\\r/g, '\r');
        consumed = m[0].length + lead + close + 1 + tail[0].length;
      }
    }
    if (value === undefined) {
      const rawLine = line.slice(m[0].length);
      const hash = rawLine.indexOf('#');
      value = unquoted(hash < 0 ? rawLine : rawLine.slice(0, hash));
      consumed = line.length;
    }
    const spanned = src.slice(at, at + consumed).split('\n').length - 1;
    at += consumed;
    // Past the end of the value's last line.
    const nl = src.indexOf('\n', at);
    at = nl < 0 ? src.length : nl + 1;
    lineNo += spanned + 1;
    if (seen.has(key)) {
      errors.push(`Line ${here}: ${key} appears twice`);
      continue;
    }
    seen.add(key);
    entries.push({ key, value });
  }
  return { entries, errors };
}
