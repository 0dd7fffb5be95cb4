/** Today's numbers: nutrition totals, activity, sleep and readiness. */
import { h } from "./dom.js";
import { amount, duration, type Screen } from "./screen.js";

function stat(label: string, value: string, test: string): HTMLElement {
  return h("div", { class: "stat", "data-test": test }, h("span", { class: "value" }, value), h("span", { class: "label" }, label));
}

export function todaySection(screen: Screen): HTMLElement {
  const { nutrition, activity, sleep } = screen.home.day;
  const totals = nutrition.totals;
  const readiness = screen.home.readiness;
  return h(
    "section",
    { class: "card today", "data-test": "today" },
    h("h2", {}, `Today, ${screen.day}`),
    h(
      "div",
      { class: "stats" },
      stat("kcal", amount(totals.calories), "calories"),
      stat("protein g", amount(totals.protein_g), "protein"),
      stat("carbs g", amount(totals.carbs_g), "carbs"),
      stat("fat g", amount(totals.fat_g), "fat"),
      stat("meals", String(nutrition.meals), "meals"),
    ),
    h(
      "div",
      { class: "stats" },
      stat("workouts", String(activity.workouts), "workouts"),
      stat("active", duration(activity.active_minutes), "active"),
      stat("sleep", sleep.sessions > 0 ? duration(sleep.minutes) : "none", "sleep"),
      stat("sleep score", sleep.score == null ? "–" : String(sleep.score), "sleep-score"),
      stat("readiness", readiness ? String(readiness.score) : "not scored yet", "readiness"),
    ),
  );
}
