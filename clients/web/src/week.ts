/** A week of nutrition as a bar chart of calories (SVG), from the daily summaries. */
import { ok, type Schemas } from "../../typescript/src/index.js";
import { describe, h } from "./dom.js";
import { vitals } from "./session.js";
import { addDays, amount, type Screen } from "./screen.js";

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    element.setAttribute(name, String(value));
  }
  return element;
}

/** The seven days ending `day`, each with its calories (0 for a day without meals). */
export function weekOf(day: string, days: Schemas["DailySummaryView"][]): { day: string; calories: number }[] {
  return Array.from({ length: 7 }, (_, i) => {
    const d = addDays(day, i - 6);
    return { day: d, calories: days.find((s) => s.day === d)?.totals.calories ?? 0 };
  });
}

function chart(week: { day: string; calories: number }[]): SVGSVGElement {
  const width = 420;
  const height = 180;
  const top = Math.max(500, ...week.map((d) => d.calories));
  const bar = width / week.length;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height + 36}`, role: "img", "aria-label": "calories per day, last 7 days" });
  week.forEach((d, i) => {
    const tall = Math.round((d.calories / top) * height);
    const x = i * bar + 8;
    const rect = svg("rect", { x, y: height - tall, width: bar - 16, height: tall, rx: 4, class: "bar" });
    rect.setAttribute("data-test", "bar");
    rect.setAttribute("data-day", d.day);
    rect.setAttribute("data-calories", String(d.calories));
    const title = svg("title", {});
    title.textContent = `${d.day}: ${amount(d.calories)} kcal`;
    rect.append(title);
    const label = svg("text", { x: x + (bar - 16) / 2, y: height + 16, "text-anchor": "middle", class: "axis" });
    label.textContent = d.day.slice(5);
    const value = svg("text", { x: x + (bar - 16) / 2, y: height + 32, "text-anchor": "middle", class: "axis" });
    value.textContent = d.calories ? amount(d.calories) : "";
    root.append(rect, label, value);
  });
  return root;
}

export function weekSection(screen: Screen): HTMLElement {
  const body = h("div", { class: "loading" }, "Loading the week…");
  const section = h("section", { class: "card", "data-test": "week" }, h("h2", {}, "This week's calories"), body);
  const from = addDays(screen.day, -6);
  vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/nutrition/daily", { params: { query: { from, to: screen.day } } })))
    .then((daily) => {
      const drawn = h("div", { class: "chart", "data-test": "week-chart" });
      drawn.append(chart(weekOf(screen.day, daily.days)));
      body.replaceWith(drawn);
    })
    .catch((error: unknown) => {
      body.replaceWith(h("p", { class: "error", role: "alert" }, describe(error)));
    });
  return section;
}
