/**
 * The signed-in screen: today's dashboard and the sections around it. Every section is
 * drawn from the dashboard last read; a write waits for its projection (`converge`)
 * and then draws them all again, with an "updating" badge while it waits.
 */
import { describe, h, replace } from "./dom.js";
import { goalsSection } from "./goals.js";
import { logMealSection, recentMealsSection, recentWorkoutsSection } from "./meals.js";
import { homeWhen, readHome, type Home, type Screen } from "./screen.js";
import { vitals } from "./session.js";
import { todaySection } from "./today.js";
import { trainingSection } from "./training.js";
import { wearableSection } from "./wearable.js";
import { weekSection } from "./week.js";

/** Draws the home screen into `root`; `signedOut` runs after signing out. */
export async function homeScreen(root: HTMLElement, signedOut: () => void): Promise<void> {
  replace(root, h("main", { class: "loading", "data-test": "loading" }, "Loading your day…"));
  const first = await readHome();
  const badge = h("span", { class: "badge", "data-test": "sync", "data-state": "idle" }, "Up to date");
  const sections = h("div", { class: "grid" });
  const signOut = h("button", { type: "button", class: "link", "data-test": "sign-out" }, "Sign out");
  signOut.addEventListener("click", () => {
    // Signed out here whatever the API answers (a network failure included): the
    // refresh token it could not end expires unused.
    vitals
      .logout()
      .catch(() => vitals.resume(null))
      .finally(signedOut);
  });

  const screen: Screen = {
    day: first.day.day,
    home: first,
    redraw: () => draw(),
    converge: async (landed: (home: Home) => boolean) => {
      badge.textContent = "Updating…";
      badge.dataset.state = "updating";
      try {
        screen.home = await homeWhen(screen.day, landed);
        badge.textContent = "Up to date";
        badge.dataset.state = "idle";
      } catch (error) {
        badge.textContent = `Not updated yet: ${describe(error)}`;
        badge.dataset.state = "late";
      }
      draw();
    },
  };

  function draw(): void {
    replace(
      sections,
      todaySection(screen),
      logMealSection(screen),
      recentMealsSection(screen),
      weekSection(screen),
      goalsSection(screen),
      recentWorkoutsSection(screen),
      trainingSection(screen),
      wearableSection(screen),
    );
  }

  const name = first.profile?.display_name ?? "";
  replace(
    root,
    h(
      "main",
      { class: "home", "data-test": "home" },
      h("header", {}, h("h1", {}, "Vitals"), h("span", { class: "who" }, name), badge, signOut),
      sections,
    ),
  );
  draw();
}
