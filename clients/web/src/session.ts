/**
 * The app's one connection to the API: the generated client on this page's origin, its
 * session kept in the tab's `sessionStorage` (gone when the tab closes; a phone would use
 * its keychain), and a refresh of the access token when the API says it has expired.
 */
import { ApiError, Vitals, type Session } from "../../typescript/src/index.js";

const KEY = "vitals.session";

function kept(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export const vitals = new Vitals({
  baseUrl: window.location.origin,
  onSession: (session) => {
    if (session) {
      sessionStorage.setItem(KEY, JSON.stringify(session));
    } else {
      sessionStorage.removeItem(KEY);
    }
  },
});
vitals.resume(kept());

/**
 * Runs `call`; when the access token has expired (401) and a refresh token is kept,
 * exchanges it once and runs `call` again. A refused refresh signs the user out.
 */
export async function withSession<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401 || !vitals.session) {
      throw error;
    }
    try {
      await vitals.refresh();
    } catch (refused) {
      vitals.resume(null);
      throw refused;
    }
    return call();
  }
}
