/**
 * The app's one connection to the API: the generated client on this page's origin, its
 * session kept in the tab's `sessionStorage` (gone when the tab closes; a phone would use
 * its keychain). Every call goes through `vitals.authorized`, which refreshes an expired
 * access token (once, however many sections meet the expiry together).
 */
import { Vitals, type Session } from "../../typescript/src/index.js";

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
