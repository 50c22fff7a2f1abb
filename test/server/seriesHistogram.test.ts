// SeriesHistogram exposes exactly what prom-client's own Histogram does for the same
// observations, so dashboards and alerts cannot tell the two apart.
import t from 'tap';
import { Histogram, Registry } from 'prom-client';
import { SeriesHistogram } from '../../server/seriesHistogram.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

t.test('the exposition text equals a prom-client Histogram fed the same values', async (t) => {
  const theirs = new Registry();
  const ours = new Registry();
  const help = 'Time from a request arriving to its answer being written.';
  const reference = new Histogram({ name: 'x_seconds', help, labelNames: ['route', 'method'], buckets: BUCKETS, registers: [theirs] });
  const series = new SeriesHistogram({ name: 'x_seconds', help, buckets: [...BUCKETS].reverse(), registers: [ours] });
  const sets = [
    { route: '/api/v3/secrets/raw', method: 'GET' },
    { route: '/api/v1/auth/universal-auth/login', method: 'POST' },
    { route: 'a "quoted"\\route\nwith a newline', method: 'OTHER' },
  ];
  // Every bound exactly (a value on a bound counts in it), between bounds, beyond the last, zero.
  const values = [0, ...BUCKETS, ...BUCKETS.map((b) => b * 1.5), 7, 1e-9, 0.0100000001];
  for (const [i, labels] of sets.entries()) {
    const s = series.series(`${labels.method} ${labels.route}`, labels);
    for (const v of values.slice(i)) {
      reference.observe(labels, v);
      s.observe(v);
    }
  }
  t.equal(await ours.metrics(), await theirs.metrics());
  t.same(series.series('GET /api/v3/secrets/raw', { route: 'ignored', method: 'ignored' }), series.series('GET /api/v3/secrets/raw', sets[0]!), 'a key names one series');

  series.reset();
  reference.reset();
  t.equal(await ours.metrics(), await theirs.metrics(), 'reset empties both');
});
