/** Goals with their latest progress, and the form that sets one. */
import { ok, type Schemas } from "../../typescript/src/index.js";
import { describe, errorLine, field, h, onSubmit, values } from "./dom.js";
import { vitals } from "./session.js";
import { amount, type Screen } from "./screen.js";

const KINDS: [Schemas["GoalKind"], string][] = [
  ["daily_protein_grams", "Protein a day (g)"],
  ["weekly_workout_count", "Workouts a week"],
  ["weekly_active_minutes", "Active minutes a week"],
  ["weekly_distance_km", "Distance a week (km)"],
  ["nightly_sleep_hours", "Sleep a night (h)"],
];

function goalRow(goal: Schemas["GoalView"]): HTMLElement {
  const latest = goal.latest;
  const share = latest ? Math.min(1, latest.value / Math.max(latest.target, 0.1)) : 0;
  return h(
    "li",
    { "data-test": "goal", "data-goal-id": goal.goal_id },
    h("span", { class: "name" }, goal.title),
    latest
      ? h(
          "span",
          { class: "detail", "data-test": "goal-progress" },
          `${amount(latest.value)} of ${amount(latest.target)} since ${latest.period_start}${latest.met ? " · met" : ""}`,
        )
      : h("span", { class: "detail" }, "counting…"),
    h("progress", { max: 1, value: share }),
  );
}

/** Reads the goals, again while one still has no progress (its projection is on the way). */
async function drawGoals(list: HTMLElement, tries = 40): Promise<void> {
  const goals = await vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/goals", {})));
  list.replaceChildren(
    ...(goals.goals.length ? goals.goals.map(goalRow) : [h("li", { class: "empty" }, "No goals yet.")]),
  );
  if (tries > 0 && goals.goals.some((g) => g.status === "active" && !g.latest) && list.isConnected) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    return drawGoals(list, tries - 1);
  }
}

export function goalsSection(screen: Screen): HTMLElement {
  const list = h("ul", { class: "list" }, h("li", { class: "loading" }, "Loading goals…"));
  const form = h(
    "form",
    { class: "goal-form", "data-test": "set-goal" },
    h("label", {}, "Goal", h("select", { name: "kind" }, ...KINDS.map(([kind, label]) => h("option", { value: kind }, label)))),
    field("Target", "target", { type: "number", min: 0.1, step: "0.1", required: true }),
    field("Title", "title", { required: true, maxlength: 80 }),
    h("button", { type: "submit" }, "Set goal"),
    errorLine(),
  );
  onSubmit(form, async () => {
    const v = values(form);
    const body = { kind: (v.kind ?? "daily_protein_grams") as Schemas["GoalKind"], target: Number(v.target), title: v.title ?? "" };
    const goal = await vitals.authorized(async () => ok(await vitals.api.POST("/v1/me/goals", { body })));
    form.reset();
    await screen.converge((home) => home.active_goals.some((g) => g.goal_id === goal.goal_id));
  });
  const section = h("section", { class: "card", "data-test": "goals" }, h("h2", {}, "Goals"), list, form);
  drawGoals(list).catch((error: unknown) => list.replaceChildren(h("li", { class: "error", role: "alert" }, describe(error))));
  return section;
}
