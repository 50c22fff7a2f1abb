// autocannon hook: ESO revokes its token after every sync (its SDK client still
// carries the token as Bearer, and sends it in the body).
type Req = { headers?: Record<string, string>; body?: string };
type Context = { accessToken?: string };

export = function setupRevoke(req: Req, context: Context): Req {
  const headers = { ...req.headers };
  if (context.accessToken) headers['Authorization'] = `Bearer ${context.accessToken}`;
  return { ...req, headers, body: JSON.stringify({ accessToken: context.accessToken ?? '' }) };
};
