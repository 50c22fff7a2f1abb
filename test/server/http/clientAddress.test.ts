// The one function that says where a request came from, and the IP-range helpers the
// trusted-IP lists use.
import t from 'tap';
import { clientAddress, ipMatcher, normalizeAddress, parseIpRange, parseIpRangeList } from '../../../server/http/clientAddress.js';

const trusted = (list: string) => {
  const r = parseIpRangeList(list);
  if ('error' in r) throw new Error(r.error);
  return ipMatcher(r.ranges);
};

t.test('no trusted proxies (the default): the header is never believed', async (t) => {
  const none = trusted('');
  t.equal(clientAddress('127.0.0.1', '10.1.2.3', none), '127.0.0.1');
  t.equal(clientAddress('::ffff:127.0.0.1', undefined, none), '127.0.0.1', 'IPv4-mapped socket addresses as IPv4');
  t.equal(clientAddress('0000:0000:0000:0000:0000:0000:0000:0001', '10.1.2.3', none), '::1', 'IPv6 in canonical form');
});

t.test('a trusted proxy: the rightmost entry that is not itself a trusted proxy', async (t) => {
  const proxies = trusted('127.0.0.1, 10.0.0.0/8');
  t.equal(clientAddress('203.0.113.7', '10.1.2.3', proxies), '203.0.113.7', 'the header from an untrusted peer is ignored');
  t.equal(clientAddress('127.0.0.1', '198.51.100.4', proxies), '198.51.100.4');
  t.equal(clientAddress('127.0.0.1', '6.6.6.6, 198.51.100.4', proxies), '198.51.100.4', 'what the client prepended is not believed');
  t.equal(clientAddress('127.0.0.1', '198.51.100.4, 10.0.0.5', proxies), '198.51.100.4', 'proxies in the chain are skipped');
  t.equal(clientAddress('127.0.0.1', '10.0.0.9, 10.0.0.5', proxies), '10.0.0.9', 'all trusted: the leftmost');
  t.equal(clientAddress('127.0.0.1', 'garbage, 10.0.0.5', proxies), '10.0.0.5', 'a malformed entry: the last hop believed');
  t.equal(clientAddress('127.0.0.1', 'garbage', proxies), '127.0.0.1');
  t.equal(clientAddress('127.0.0.1', ' 2001:DB8::1 ', proxies), '2001:db8::1');
  t.equal(clientAddress('127.0.0.1', '', proxies), '127.0.0.1');
});

t.test('ranges: parsing and matching', async (t) => {
  t.same(parseIpRange('10.0.0.0/8'), { ipAddress: '10.0.0.0', type: 'ipv4', prefix: 8 });
  t.same(parseIpRange('::/0'), { ipAddress: '::', type: 'ipv6', prefix: 0 });
  t.same(parseIpRange('192.168.1.7'), { ipAddress: '192.168.1.7', type: 'ipv4' });
  for (const bad of ['', '10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/8/8', '::1/129', 'fe80::1%eth0', 'localhost', '10.0.0.0/ 8', '1.2.3']) {
    t.equal(parseIpRange(bad), undefined, JSON.stringify(bad));
  }
  const m = trusted('10.0.0.0/8, 2001:db8::/32, 192.168.1.7');
  t.ok(m('10.255.0.1'));
  t.ok(m('::ffff:10.0.0.1'), 'IPv4-mapped matches an IPv4 range');
  t.ok(m('2001:db8::42'));
  t.ok(m('192.168.1.7'));
  t.notOk(m('192.168.1.8'));
  t.notOk(m('11.0.0.1'));
  t.notOk(m(null), 'no address matches nothing');
  t.notOk(m('not an address'));
  t.notOk(ipMatcher([])('10.0.0.1'), 'an empty list matches nothing');
  t.equal(normalizeAddress('[::1]'), undefined, 'brackets are not an address');
});
