/**
 * The reference web app in a real browser: Debian's Chromium, headless, driven by
 * playwright-core against a running `vitals serve` (`VITALS_URL`). Signs up, logs a meal
 * and sees it reach the dashboard without a reload, edits it, reads the week's chart,
 * sets a goal and sees its progress, starts a training block, connects the sandbox
 * wearable, meets an expired access token, signs out and back in (a wrong password
 * shows the API's error). Keeps
 * screenshots of the dashboard and the week chart in `VITALS_ARTIFACTS` and prints the
 * time from opening the page to a rendered dashboard. Run by `scripts/client-test`.
 */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";

const baseUrl = process.env.VITALS_URL ?? "";
const artifacts = process.env.VITALS_ARTIFACTS ?? "target/test-logs/web";
const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const password = "correct horse battery staple";
/** How long a projection may take to reach the screen. */
const LANDS_WITHIN = 20_000;

async function step<T>(name: string, body: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await body();
  console.log(`web-flow: ${name} (${(performance.now() - started).toFixed(0)} ms)`);
  return result;
}

/** The text of a stat of the Today card. */
async function stat(page: Page, name: string): Promise<string> {
  return (await page.locator(`[data-test=today] [data-test=${name}] .value`).textContent()) ?? "";
}

async function waitForStat(page: Page, name: string, value: string): Promise<void> {
  await page
    .locator(`[data-test=today] [data-test=${name}] .value`, { hasText: new RegExp(`^${value}$`) })
    .waitFor({ timeout: LANDS_WITHIN });
}

async function signUp(page: Page, email: string): Promise<number> {
  const opened = performance.now();
  await page.goto(baseUrl + "/");
  const form = page.locator("[data-test=sign-up]");
  await form.locator("input[name=display_name]").fill("Ana");
  await form.locator("input[name=email]").fill(email);
  await form.locator("input[name=password]").fill(password);
  await form.locator("input[name=timezone]").fill("Europe/Berlin");
  await form.locator("button[type=submit]").click();
  await page.locator("[data-test=today]").waitFor();
  return performance.now() - opened;
}

async function logAndEditMeal(page: Page): Promise<void> {
  const form = page.locator("[data-test=log-meal]");
  await form.locator("input[name=name]").fill("Porridge with berries");
  await form.locator("input[name=time]").fill("08:15");
  await form.locator("input[name=calories]").fill("420");
  await form.locator("input[name=protein_g]").fill("18.5");
  await form.locator("input[name=carbs_g]").fill("61");
  await form.locator("input[name=fat_g]").fill("9.5");
  await form.locator("button[type=submit]").click();
  // No reload: the screen reads until the projection lands.
  await page.locator("[data-test=recent-meals] [data-test=meal]", { hasText: "Porridge with berries" }).waitFor({ timeout: LANDS_WITHIN });
  await waitForStat(page, "calories", "420");
  assert.equal(await stat(page, "protein"), "18.5");
  assert.equal(await stat(page, "meals"), "1");

  await page.locator("[data-test=meal] [data-test=edit-meal]").first().click();
  const edit = page.locator("[data-test=edit-meal-form]");
  await edit.locator("input[name=calories]").fill("450");
  await edit.locator("input[name=name]").fill("Porridge, large");
  await edit.locator("button[type=submit]").click();
  await page.locator("[data-test=meal]", { hasText: "Porridge, large" }).waitFor({ timeout: LANDS_WITHIN });
  await waitForStat(page, "calories", "450");
  assert.equal(await stat(page, "meals"), "1", "an edit replaces, it does not add");
}

async function weekChart(page: Page): Promise<void> {
  const today = await page.locator("[data-test=today] h2").textContent();
  const day = (today ?? "").replace("Today, ", "");
  const bar = page.locator(`[data-test=week-chart] [data-test=bar][data-day="${day}"]`);
  await bar.waitFor({ timeout: LANDS_WITHIN });
  assert.equal(await bar.getAttribute("data-calories"), "450", "today's bar is the edited meal");
  assert.equal(await page.locator("[data-test=week-chart] [data-test=bar]").count(), 7);
}

async function goal(page: Page): Promise<void> {
  const form = page.locator("[data-test=set-goal]");
  await form.locator("select[name=kind]").selectOption("daily_protein_grams");
  await form.locator("input[name=target]").fill("15");
  await form.locator("input[name=title]").fill("Protein every day");
  await form.locator("button[type=submit]").click();
  const progress = page.locator("[data-test=goal]", { hasText: "Protein every day" }).locator("[data-test=goal-progress]");
  await progress.waitFor({ timeout: LANDS_WITHIN });
  await page.locator("[data-test=goal-progress]", { hasText: "18.5 of 15" }).waitFor({ timeout: LANDS_WITHIN });
  assert.match((await progress.textContent()) ?? "", /met/);
}

async function trainingBlock(page: Page): Promise<void> {
  const form = page.locator("[data-test=start-block]");
  await form.locator("input[name=focus]").fill("Base building");
  await form.locator("input[name=weeks]").fill("6");
  await form.locator("button[type=submit]").click();
  await page.locator("[data-test=training-block]", { hasText: "Base building" }).waitFor({ timeout: LANDS_WITHIN });
}

async function wearable(page: Page): Promise<void> {
  await page.locator("[data-test=connect-wearable] button").click();
  await page.locator("[data-test=approve-wearable] button[type=submit]").click();
  await page.locator("[data-test=connection]", { hasText: "sandbox" }).waitFor({ timeout: LANDS_WITHIN });
}

/** The tab's kept access token expires (made unverifiable): a reload refreshes it. */
async function expiredSession(page: Page): Promise<void> {
  const expire = () => {
    const kept = JSON.parse(sessionStorage.getItem("vitals.session") ?? "{}") as { accessToken?: string };
    kept.accessToken = "expired.access.token";
    sessionStorage.setItem("vitals.session", JSON.stringify(kept));
  };
  await page.evaluate(expire);
  await page.reload();
  await waitForStat(page, "calories", "450");
  const token = await page.evaluate(
    () => (JSON.parse(sessionStorage.getItem("vitals.session") ?? "{}") as { accessToken?: string }).accessToken,
  );
  assert.ok(token && token !== "expired.access.token", "a new access token is kept");
}

async function signOutAndIn(page: Page, email: string): Promise<void> {
  await page.locator("[data-test=sign-out]").click();
  const form = page.locator("[data-test=sign-in]");
  await form.locator("input[name=email]").fill(email);
  await form.locator("input[name=password]").fill("not the password at all");
  await form.locator("button[type=submit]").click();
  const refused = form.locator("[role=alert]");
  await refused.filter({ hasText: /\(\w+\)$/ }).waitFor();
  console.log(`web-flow: a wrong password shows: ${await refused.textContent()}`);
  await form.locator("input[name=password]").fill(password);
  await form.locator("button[type=submit]").click();
  await waitForStat(page, "calories", "450");
}

/**
 * The API reference at /docs renders this server's OpenAPI document: one block per
 * operation; the time to render it is printed.
 */
async function apiReference(page: Page): Promise<void> {
  const spec = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const methods = new Set(["get", "put", "post", "delete", "patch"]);
  const operations = Object.values(spec.paths).flatMap((item) => Object.keys(item).filter((m) => methods.has(m)));
  const opened = performance.now();
  await page.goto(`${baseUrl}/docs`);
  const blocks = page.locator(".opblock");
  await blocks.first().waitFor();
  await page.waitForFunction((n) => document.querySelectorAll(".opblock").length === n, operations.length);
  console.log(`web-flow: /docs lists ${await blocks.count()} operations (the document has ${operations.length}), rendered in ${(performance.now() - opened).toFixed(0)} ms`);
  await page.locator(".opblock-summary-path", { hasText: "/v1/me/dashboard" }).first().waitFor();
  await page.screenshot({ path: join(artifacts, "api-reference.png") });
}

async function main(): Promise<void> {
  assert.ok(baseUrl, "VITALS_URL is not set");
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({
    executablePath: browserPath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const failures: string[] = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, timezoneId: "Europe/Berlin" });
    page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      // The browser logs every 4xx answer (a wrong password's 401, "no training block
      // today"'s 404) as a failed resource: those are the API's answers, not page errors.
      const answered = message.text().startsWith("Failed to load resource: the server responded with a status of 4");
      if (message.type() === "error" && !answered) {
        failures.push(`console error: ${message.text()}`);
      }
    });
    const email = `ana-${Date.now().toString(36)}@example.com`;
    const signedUp = await step("signed up", () => signUp(page, email));
    console.log(`web-flow: from opening the page to a rendered dashboard (with sign-up): ${signedUp.toFixed(0)} ms`);
    await step("logged a meal, saw it land, edited it", () => logAndEditMeal(page));
    await step("read the week's chart", () => weekChart(page));
    await step("set a goal, saw its progress", () => goal(page));
    await step("started a training block", () => trainingBlock(page));
    await step("connected the sandbox wearable", () => wearable(page));
    const opened = performance.now();
    await page.reload();
    await waitForStat(page, "calories", "450");
    console.log(`web-flow: from opening the page to a rendered dashboard (signed in): ${(performance.now() - opened).toFixed(0)} ms`);
    await page.locator("[data-test=week-chart]").waitFor();
    await page.screenshot({ path: join(artifacts, "dashboard.png"), fullPage: true });
    await page.locator("[data-test=week]").screenshot({ path: join(artifacts, "week-chart.png") });
    console.log(`web-flow: screenshots in ${artifacts} (dashboard.png, week-chart.png)`);
    await step("an expired access token refreshed on reload", () => expiredSession(page));
    await step("signed out, refused a wrong password, signed in", () => signOutAndIn(page, email));
    await step("read the API reference", () => apiReference(page));
  } finally {
    await browser.close();
  }
  assert.deepEqual(failures, [], "the page logged no errors");
  console.log("web-flow: passed");
}

main().catch((e: unknown) => {
  console.error("web-flow: FAILED:", e);
  process.exitCode = 1;
});
