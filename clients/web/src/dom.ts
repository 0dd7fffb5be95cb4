/**
 * The few DOM helpers the app is written with: an element builder, form fields, and the
 * API's refusals shown in the app's error line.
 */
import { ApiError } from "../../typescript/src/index.js";

type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/** `<tag attrs>children</tag>`; `on<event>` attributes are listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else if (value !== false && value !== undefined) {
      element.setAttribute(name, String(value));
    }
  }
  append(element, ...children);
  return element;
}

/** Appends what is not empty. */
export function append(parent: Element, ...children: Child[]): void {
  for (const child of children) {
    if (child) {
      parent.append(child);
    }
  }
}

/** Replaces what `parent` holds. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A labelled input; its `name` is the form field's. */
export function field(label: string, name: string, attrs: Attributes = {}): HTMLLabelElement {
  return h("label", {}, label, h("input", { name, ...attrs }));
}

/** The form's text values by field name. */
export function values(form: HTMLFormElement): Record<string, string> {
  const out: Record<string, string> = {};
  new FormData(form).forEach((value, name) => {
    out[name] = typeof value === "string" ? value.trim() : "";
  });
  return out;
}

/** What a refusal says to the user: the API's error code and message, or the failure. */
export function describe(error: unknown): string {
  if (error instanceof ApiError) {
    return `${error.detail} (${error.code})`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Runs `action` when `form` is submitted, as [`submitting`] says (no page load). */
export function onSubmit(form: HTMLFormElement, action: () => Promise<void>): void {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void submitting(form, action);
  });
}

/**
 * Runs `action` for a form: disables its button and shows "…" while it runs, and puts
 * a refusal in the form's error line (role=alert) rather than losing it.
 */
async function submitting(form: HTMLFormElement, action: () => Promise<void>): Promise<void> {
  const button = form.querySelector("button");
  const line = form.querySelector<HTMLElement>("[role=alert]");
  if (line) {
    line.textContent = "";
  }
  button?.setAttribute("disabled", "");
  const label = button?.textContent ?? "";
  if (button) {
    button.textContent = `${label}…`;
  }
  try {
    await action();
  } catch (error) {
    if (line) {
      line.textContent = describe(error);
    } else {
      throw error;
    }
  } finally {
    button?.removeAttribute("disabled");
    if (button) {
      button.textContent = label;
    }
  }
}

/** An error line for a form or section. */
export function errorLine(): HTMLParagraphElement {
  return h("p", { class: "error", role: "alert" });
}
