// autocannon hook: the read of an ESO sync cycle carries the token from the login.
type Req = { headers?: Record<string, string> };
type Context = { accessToken?: string };

export = function setupRead(req: Req, context: Context): Req {
  // Without a token the request still goes out (and is counted as a 401), so a failed
  // login is visible in the figures instead of silently shortening the cycle.
  const headers = { ...req.headers };
  if (context.accessToken) headers['Authorization'] = `Bearer ${context.accessToken}`;
  return { ...req, headers };
};
