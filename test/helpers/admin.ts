// The superadmin of a test instance, registered over HTTP the way the UI does it.
import { request } from './http.js';

export interface AdminSession {
  token: string;
  csrfToken: string;
  cookie: string;
  userId: string;
}

export const ADMIN = { email: 'admin@example.test', password: 'a long admin passphrase', firstName: 'Ada', lastName: 'Admin' };
/** What a login sends: bodies are strict, so the signup's name fields would be refused. */
export const ADMIN_LOGIN = { email: ADMIN.email, password: ADMIN.password };

export async function signupAdmin(url: string, who = ADMIN): Promise<AdminSession> {
  const r = await request(`${url}/api/v1/admin/signup`, { method: 'POST', json: who });
  if (r.status !== 200) throw new Error(`signup failed: ${r.status} ${JSON.stringify(r.body)}`);
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { token: r.body.token, csrfToken: r.body.csrfToken, cookie, userId: r.body.user.id };
}
