/**
 * The mobile app's flow through the typed client, against a running `vitals serve`
 * (`VITALS_URL`; `VITALS_WEBHOOK_SECRET`, the server's, signs the wearable's delivery):
 * sign up, log meals as a phone sends them, refresh the token (and meet an expired one
 * with three calls at once), read the dashboard until it converges, open the history, set a goal and see its progress, connect the sandbox
 * wearable and receive a delivery, sign out, delete the account.
 *
 * Every call goes through `Vitals` and is typed by the OpenAPI document; a step that
 * fails throws, and the process exits non-zero. Run by `scripts/client-test`.
 */
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { ApiError, Vitals, eventually, ok, type Schemas } from "../src/index.js";

const baseUrl = requiredEnv("VITALS_URL");
const webhookSecret = requiredEnv("VITALS_WEBHOOK_SECRET");
const password = "correct horse battery staple";
const timezone = "Europe/Berlin";

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

/** A unique enough suffix for this run's account and wearable user. */
const run = randomBytes(6).toString("hex");

/** Runs one step, printing its name and how long it took. */
async function step<T>(name: string, body: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await body();
  console.log(`client-flow: ${name} (${(performance.now() - started).toFixed(0)} ms)`);
  return result;
}

/** The status an API call was refused with (it must be refused). */
async function refusal(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
  } catch (e) {
    if (e instanceof ApiError) {
      return e.status;
    }
    throw e;
  }
  throw new Error("the call was expected to be refused");
}

/** The user's today, as the server names it (no clock of ours decides a day). */
async function today(vitals: Vitals): Promise<string> {
  const home = ok(await vitals.api.GET("/v1/me/dashboard", {}));
  return home.day.day;
}

/** Two meals as a phone sends them: its local offset, no fractional seconds, a retry. */
async function logMeals(vitals: Vitals, day: string): Promise<Schemas["MealView"][]> {
  const breakfast: Schemas["MealBody"] = {
    name: "Porridge with berries",
    eaten_at: `${day}T08:15:00+01:00`,
    calories: 420,
    protein_g: 18.5,
    carbs_g: 61,
    fat_g: 9.5,
  };
  const key = { "Idempotency-Key": `breakfast-${run}` };
  const first = ok(await vitals.api.POST("/v1/me/meals", { body: breakfast, params: { header: key } }));
  // The phone lost the answer and retries with the same key: the same meal, once.
  const again = ok(await vitals.api.POST("/v1/me/meals", { body: breakfast, params: { header: key } }));
  assert.equal(again.meal_id, first.meal_id, "a retried Idempotency-Key logs nothing new");
  assert.equal(first.day, day, "08:15 in Berlin is the user's day");
  assert.equal(first.eaten_at, `${day}T07:15:00.000Z`, "stored in UTC to the millisecond");
  const lunch: Schemas["MealBody"] = {
    name: "Lentil soup",
    eaten_at: `${day}T12:40:00+01:00`,
    calories: 530,
    protein_g: 31.5,
    carbs_g: 70,
    fat_g: 12,
    timezone,
  };
  const second = ok(await vitals.api.POST("/v1/me/meals", { body: lunch }));
  return [first, second];
}

/**
 * Exchanges the refresh token: the new pair works, the old refresh token is spent, and
 * presenting it again ends the session.
 */
async function refreshToken(vitals: Vitals): Promise<void> {
  const before = vitals.session;
  assert.ok(before);
  const after = await vitals.refresh();
  assert.notEqual(after.refreshToken, before.refreshToken);
  const profile = ok(await vitals.api.GET("/v1/me/profile", {}));
  assert.equal(profile.timezone, timezone);
  const replayed = await refusal(() =>
    new Vitals({ baseUrl }).api
      .POST("/v1/auth/refresh", { body: { refresh_token: before.refreshToken } })
      .then(ok),
  );
  assert.equal(replayed, 401, "a refresh token exchanges once");
  // A replay is a stolen token's sign: it ends the session it belonged to, so the
  // refresh token the client holds now is refused too (its access token still works
  // until it expires).
  const ended = await refusal(() => vitals.refresh());
  assert.equal(ended, 401, "a replayed refresh token ends its session");
}

/**
 * An expired access token (here one the server cannot verify) met by three calls at
 * once: each is answered, after one exchange of the refresh token between them.
 */
async function expiredTokenRefreshedOnce(vitals: Vitals, sessions: () => number): Promise<void> {
  const session = vitals.session;
  assert.ok(session);
  vitals.resume({ ...session, accessToken: "expired.access.token" });
  const before = sessions();
  const [profile, home, goals] = await Promise.all([
    vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/profile", {}))),
    vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/dashboard", {}))),
    vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/goals", {}))),
  ]);
  assert.equal(profile.timezone, timezone);
  assert.ok(home.day.day && Array.isArray(goals.goals));
  assert.equal(sessions() - before, 1, "one exchange of the refresh token for the three calls");
  assert.notEqual(vitals.session?.accessToken, "expired.access.token");
}

/** Reads the day's dashboard until both meals are in it; the converged dashboard. */
async function dashboardConverges(vitals: Vitals, day: string, meals: Schemas["MealView"][]) {
  const calories = meals.reduce((sum, m) => sum + m.nutrients.calories, 0);
  const protein = meals.reduce((sum, m) => sum + m.nutrients.protein_g, 0);
  const home = await eventually("the dashboard shows both meals", async () => {
    const read = ok(await vitals.api.GET("/v1/me/dashboard", { params: { query: { date: day } } }));
    // The day's totals and the recent meals are separate projections: each lands
    // on its own.
    const recent = new Set(read.recent_meals.map((m) => m.meal_id));
    const listed = meals.every((m) => recent.has(m.meal_id));
    return read.day.nutrition.meals === meals.length && listed ? read : undefined;
  });
  assert.equal(home.day.nutrition.totals.calories, calories);
  assert.equal(home.day.nutrition.totals.protein_g, protein);
  const recent = home.recent_meals.map((m) => m.meal_id);
  assert.deepEqual(recent, [meals[1]?.meal_id, meals[0]?.meal_id], "newest first");
  return home;
}

/** The day's meals and the week's nutrition, as the history screen opens them. */
async function history(vitals: Vitals, day: string, meals: Schemas["MealView"][]) {
  const page = ok(await vitals.api.GET("/v1/me/meals", { params: { query: { date: day } } }));
  assert.deepEqual(
    new Set(page.items.map((m) => m.meal_id)),
    new Set(meals.map((m) => m.meal_id)),
  );
  const from = addDays(day, -6);
  const week = ok(
    await vitals.api.GET("/v1/me/nutrition/daily", { params: { query: { from, to: day } } }),
  );
  const listed = week.days.find((d) => d.day === day);
  assert.ok(listed, `the week's nutrition lists ${day}`);
}

/** `day` (YYYY-MM-DD) moved by `days`, as calendar arithmetic on the date alone. */
function addDays(day: string, days: number): string {
  const at = new Date(`${day}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() + days);
  return at.toISOString().slice(0, 10);
}

/** A daily protein goal below what was eaten: its progress comes to `met`. */
async function goalProgress(vitals: Vitals, day: string, protein: number) {
  const goal = ok(
    await vitals.api.POST("/v1/me/goals", {
      body: { kind: "daily_protein_grams", target: 40, title: "Protein every day", timezone },
    }),
  );
  assert.equal(goal.period, "daily");
  const progress = await eventually("the goal's progress counts today's meals", async () => {
    const page = ok(
      await vitals.api.GET("/v1/me/goals/{id}/progress", {
        params: { path: { id: goal.goal_id } },
      }),
    );
    return page.items.find((p) => p.period_start === day && p.value === protein);
  });
  assert.equal(progress.met, true, `${protein} g against a target of 40 g`);
}

/** Connects the sandbox wearable as the app does, then delivers a run from it. */
async function wearable(vitals: Vitals, day: string) {
  const provider = "sandbox";
  const started = ok(
    await vitals.api.POST("/v1/integrations/{provider}/connect", {
      params: { path: { provider } },
    }),
  );
  // The wearable's user approves at the sandbox: its code is bound to the PKCE
  // challenge the authorize URL carries.
  const challenge = new URL(started.authorize_url).searchParams.get("code_challenge");
  assert.ok(challenge, "the authorize URL carries a PKCE challenge");
  const providerUser = `watch-${run}`;
  const code = `code-${providerUser}.${challenge}`;
  // The vendor redirects the phone to the callback, which hands over to the app's URL.
  const redirect = await vitals.api.GET("/v1/integrations/{provider}/callback", {
    params: { path: { provider }, query: { state: started.state, code } },
    redirect: "manual",
  });
  assert.equal(redirect.response.status, 303);
  const location = redirect.response.headers.get("location");
  assert.ok(location, "the callback redirects to the app");
  const carried = new URL(location).searchParams;
  const connected = ok(
    await vitals.api.POST("/v1/integrations/{provider}/complete", {
      params: { path: { provider } },
      body: { state: carried.get("state") ?? "", code: carried.get("code") ?? "" },
    }),
  );
  assert.equal(connected.connected, true);

  const delivery: Schemas["WebhookPayload"] = {
    delivery_id: `delivery-${run}`,
    provider_user_id: providerUser,
    workouts: [
      { external_id: `run-${run}`, sport: "run", started_at: `${day}T06:30:00Z`, duration_s: 1800, distance_m: 5000 },
    ],
  };
  const raw = JSON.stringify(delivery);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac("sha256", webhookSecret).update(`${timestamp}.${raw}`).digest("hex");
  const vendor = new Vitals({ baseUrl });
  ok(
    await vendor.api.POST("/v1/integrations/{provider}/webhook", {
      params: {
        path: { provider },
        header: { "X-Vitals-Timestamp": timestamp, "X-Vitals-Signature": signature },
      },
      body: delivery,
      // The signature is over these very bytes.
      bodySerializer: () => raw,
    }),
  );
  await eventually("the delivered run is on the dashboard", async () => {
    const home = ok(await vitals.api.GET("/v1/me/dashboard", { params: { query: { date: day } } }));
    const synced = home.recent_workouts.some((w) => w.sport === "run" && w.distance_m === 5000);
    const linked = home.connections.some((c) => c.provider === provider && c.connected);
    return synced && linked ? home : undefined;
  });
}

/** Signs out, then in again, and deletes the account: its email no longer signs in. */
async function signOutAndDelete(vitals: Vitals, email: string) {
  const spent = vitals.session?.refreshToken ?? "";
  await vitals.logout();
  const after = await refusal(() =>
    vitals.api.POST("/v1/auth/refresh", { body: { refresh_token: spent } }).then(ok),
  );
  assert.equal(after, 401, "a signed-out refresh token is refused");
  await vitals.login(email, password);
  const wrong = await refusal(async () =>
    ok(await vitals.api.DELETE("/v1/me", { body: { current_password: "not the password" } })),
  );
  assert.equal(wrong, 403, "a token alone cannot delete the account");
  ok(await vitals.api.DELETE("/v1/me", { body: { current_password: password } }));
  const gone = await eventually("the deleted account no longer signs in", async () => {
    const status = await refusal(() => vitals.login(email, password)).catch(() => undefined);
    return status === 401 ? status : undefined;
  });
  assert.equal(gone, 401);
}

async function main() {
  const started = performance.now();
  let sessions = 0;
  const vitals = new Vitals({ baseUrl, onSession: () => (sessions += 1) });
  const email = `ana-${run}@example.com`;
  await step("signed up", () =>
    vitals.register({ email, password, display_name: "Ana", timezone }),
  );
  const day = await today(vitals);
  const meals = await step("logged two meals (one retried)", () => logMeals(vitals, day));
  await step("an expired token refreshed once for three calls", () =>
    expiredTokenRefreshedOnce(vitals, () => sessions),
  );
  await step("refreshed the token; a replayed one ended the session", () => refreshToken(vitals));
  await step("dashboard converged", () => dashboardConverges(vitals, day, meals));
  await step("opened the history", () => history(vitals, day, meals));
  const protein = meals.reduce((sum, m) => sum + m.nutrients.protein_g, 0);
  await step("goal progress seen", () => goalProgress(vitals, day, protein));
  await step("wearable connected, delivery synced", () => wearable(vitals, day));
  await step("signed out, account deleted", () => signOutAndDelete(vitals, email));
  console.log(`client-flow: passed in ${(performance.now() - started).toFixed(0)} ms`);
}

main().catch((e: unknown) => {
  console.error("client-flow: FAILED:", e);
  process.exitCode = 1;
});
