/** The training block running today, or the form that starts one. */
import { ApiError, eventually, ok, type Schemas } from "../../typescript/src/index.js";
import { describe, errorLine, field, h, onSubmit, values } from "./dom.js";
import { vitals } from "./session.js";
import type { Screen } from "./screen.js";

type Block = Schemas["TrainingBlockView"];

/** The block running today, or none (a 404 is the API's "no block today"). */
async function current(): Promise<Block | null> {
  try {
    return await vitals.authorized(async () => ok(await vitals.api.GET("/v1/me/training-block/current", {})));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      return null;
    }
    throw error;
  }
}

function blockView(block: Block): HTMLElement {
  return h(
    "p",
    { "data-test": "training-block" },
    h("strong", {}, block.focus),
    ` · ${block.weeks} weeks, ${block.start_day} to ${block.end_day}`,
  );
}

function startForm(screen: Screen, body: HTMLElement): HTMLFormElement {
  const form = h(
    "form",
    { "data-test": "start-block" },
    field("Focus", "focus", { required: true, maxlength: 80, placeholder: "Base building" }),
    field("Weeks", "weeks", { type: "number", min: 1, max: 52, value: 4, required: true }),
    h("button", { type: "submit" }, "Start block"),
    errorLine(),
  );
  onSubmit(form, async () => {
    const v = values(form);
    const request = { start_day: screen.day, weeks: Number(v.weeks), focus: v.focus ?? "" };
    await vitals.authorized(async () => ok(await vitals.api.POST("/v1/me/training-blocks", { body: request })));
    // The current block is a projection: shown once it lands.
    const block = await eventually("the block to be current", async () => (await current()) ?? undefined, 20_000, 250);
    body.replaceChildren(blockView(block));
  });
  return form;
}

export function trainingSection(screen: Screen): HTMLElement {
  const body = h("div", { class: "loading" }, "Loading the training block…");
  current()
    .then((block) => body.replaceChildren(block ? blockView(block) : startForm(screen, body)))
    .catch((error: unknown) => body.replaceChildren(h("p", { class: "error", role: "alert" }, describe(error))));
  return h("section", { class: "card", "data-test": "training" }, h("h2", {}, "Training block"), body);
}
