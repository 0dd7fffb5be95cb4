/**
 * Logging a meal and editing one: the form, the recent meals list, and the wait for the
 * dashboard to show the change (the write answers before the projection lands).
 */
import { ok, type Schemas } from "../../typescript/src/index.js";
import { errorLine, field, h, onSubmit, values } from "./dom.js";
import { vitals } from "./session.js";
import { amount, type Screen } from "./screen.js";

type Meal = Schemas["MealView"];

/** The time of day now in the browser, `HH:MM`, as the form's default. */
function nowHhmm(): string {
  return new Date().toTimeString().slice(0, 5);
}

/** The meal form's fields, filled from `meal` when editing. */
function mealFields(meal?: Meal): HTMLElement[] {
  const n = meal?.nutrients;
  const time = meal ? new Date(meal.eaten_at).toTimeString().slice(0, 5) : nowHhmm();
  const number = { type: "number", min: 0, step: "0.1", required: true };
  return [
    field("Meal", "name", { required: true, maxlength: 120, value: meal?.name }),
    field("Time", "time", { type: "time", required: true, value: time }),
    field("kcal", "calories", { ...number, value: n?.calories }),
    field("Protein g", "protein_g", { ...number, value: n?.protein_g }),
    field("Carbs g", "carbs_g", { ...number, value: n?.carbs_g }),
    field("Fat g", "fat_g", { ...number, value: n?.fat_g }),
  ];
}

/** The request body of a filled meal form, for `day` (the time is the browser's). */
function mealBody(form: HTMLFormElement, day: string): Schemas["MealBody"] {
  const v = values(form);
  const num = (name: string) => Number(v[name] ?? "");
  return {
    name: v.name ?? "",
    eaten_at: new Date(`${day}T${v.time ?? "12:00"}:00`).toISOString(),
    calories: num("calories"),
    protein_g: num("protein_g"),
    carbs_g: num("carbs_g"),
    fat_g: num("fat_g"),
  };
}

/** The form that logs a meal; the meal shows on the dashboard once projected. */
export function logMealSection(screen: Screen): HTMLElement {
  const form = h(
    "form",
    { class: "meal-form", "data-test": "log-meal" },
    ...mealFields(),
    h("button", { type: "submit" }, "Log meal"),
    errorLine(),
  );
  onSubmit(form, async () => {
    const body = mealBody(form, screen.day);
    const before = screen.home.day.nutrition.meals;
    const meal = await vitals.authorized(async () => ok(await vitals.api.POST("/v1/me/meals", { body })));
    form.reset();
    // The recent meals and the day's totals are separate projections: shown once both
    // have the meal.
    const counted = before + (meal.day === screen.day ? 1 : 0);
    await screen.converge(
      (home) => home.recent_meals.some((m) => m.meal_id === meal.meal_id) && home.day.nutrition.meals === counted,
    );
  });
  return h("section", { class: "card" }, h("h2", {}, "Log a meal"), form);
}

/** One meal of the list, with its edit form behind a button. */
function mealRow(screen: Screen, meal: Meal): HTMLElement {
  const n = meal.nutrients;
  const row = h(
    "li",
    { "data-test": "meal", "data-meal-id": meal.meal_id },
    h("span", { class: "name" }, meal.name),
    h(
      "span",
      { class: "detail" },
      `${new Date(meal.eaten_at).toTimeString().slice(0, 5)} · ${amount(n.calories)} kcal · P ${amount(n.protein_g)} · C ${amount(n.carbs_g)} · F ${amount(n.fat_g)}`,
    ),
  );
  const edit = h("button", { type: "button", class: "link", "data-test": "edit-meal" }, "Edit");
  edit.addEventListener("click", () => row.replaceWith(editForm(screen, meal)));
  row.append(edit);
  return row;
}

/** Replaces `meal` with what the form holds; shown once the dashboard has it. */
function editForm(screen: Screen, meal: Meal): HTMLElement {
  const form = h(
    "form",
    { class: "meal-form", "data-test": "edit-meal-form" },
    ...mealFields(meal),
    h("button", { type: "submit" }, "Save"),
    errorLine(),
  );
  onSubmit(form, async () => {
    const body = mealBody(form, meal.day);
    const path = { id: meal.meal_id };
    const before = screen.home.day.nutrition.totals.calories;
    const saved = await vitals.authorized(async () =>
      ok(await vitals.api.PUT("/v1/me/meals/{id}", { params: { path }, body })),
    );
    // Today's calories once the edit is in the day's totals (a separate projection
    // from the recent meals).
    const today = (m: Meal) => (m.day === screen.day ? m.nutrients.calories : 0);
    const expected = before - today(meal) + today(saved);
    await screen.converge(
      (home) =>
        home.recent_meals.some(
          (m) => m.meal_id === saved.meal_id && m.name === saved.name && m.nutrients.calories === saved.nutrients.calories,
        ) && Math.abs(home.day.nutrition.totals.calories - expected) < 0.05,
    );
  });
  const cancel = h("button", { type: "button", class: "link" }, "Cancel");
  cancel.addEventListener("click", () => screen.redraw());
  form.append(cancel);
  return h("li", {}, form);
}

/** The newest meals of the last 30 days. */
export function recentMealsSection(screen: Screen): HTMLElement {
  const meals = screen.home.recent_meals;
  return h(
    "section",
    { class: "card", "data-test": "recent-meals" },
    h("h2", {}, "Recent meals"),
    meals.length
      ? h("ul", { class: "list" }, ...meals.map((meal) => mealRow(screen, meal)))
      : h("p", { class: "empty" }, "No meals yet: log one above."),
  );
}

/** The newest workouts of the last 30 days. */
export function recentWorkoutsSection(screen: Screen): HTMLElement {
  const workouts = screen.home.recent_workouts;
  return h(
    "section",
    { class: "card", "data-test": "recent-workouts" },
    h("h2", {}, "Recent workouts"),
    workouts.length
      ? h(
          "ul",
          { class: "list" },
          ...workouts.map((w) =>
            h(
              "li",
              { "data-test": "workout" },
              h("span", { class: "name" }, w.sport),
              h(
                "span",
                { class: "detail" },
                `${w.day} · ${Math.round(w.duration_s / 60)} min${w.distance_m ? ` · ${(w.distance_m / 1000).toFixed(1)} km` : ""}`,
              ),
            ),
          ),
        )
      : h("p", { class: "empty" }, "No workouts yet: connect a wearable below."),
  );
}
