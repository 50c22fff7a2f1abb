// autocannon hook (runs in autocannon's worker thread; CommonJS because its worker
// loads hooks with require): keep the access token the login answered with.
type Context = { accessToken?: string };

export = function onLoginResponse(status: number, body: string, context: Context): void {
  if (status !== 200) return;
  try {
    const parsed = JSON.parse(body) as { accessToken?: unknown };
    if (typeof parsed.accessToken === 'string') context.accessToken = parsed.accessToken;
  } catch {
    // Left unset: the next two requests of the cycle then fail and count as non-2xx.
  }
};
