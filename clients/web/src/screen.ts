/**
 * What every section of the home screen shares: the user's day (as the server names
 * it), the dashboard last read, and the way a write waits for its projection to land
 * before the screen shows it.
 */
import { eventually, ok, type Schemas } from "../../typescript/src/index.js";
import { vitals } from "./session.js";

export type Home = Schemas["HomeView"];

export interface Screen {
  /** Today for the user, `YYYY-MM-DD` (the dashboard's day, never the browser's clock). */
  readonly day: string;
  /** The dashboard as last read. */
  home: Home;
  /**
   * After a write: reads the dashboard until `landed` holds (the projection arrived;
   * the read models are eventually consistent), showing that it is updating meanwhile,
   * then draws every section again.
   */
  converge(landed: (home: Home) => boolean): Promise<void>;
  /** Draws every section again from what is known. */
  redraw(): void;
}

/** The dashboard of `day` (today when absent). */
export async function readHome(day?: string): Promise<Home> {
  const query = day ? { date: day } : {};
  return vitals.authorized(async () =>
    ok(await vitals.api.GET("/v1/me/dashboard", { params: { query } })),
  );
}

/** Polls the dashboard of `day` until `landed` holds; within 20 s. */
export function homeWhen(day: string, landed: (home: Home) => boolean): Promise<Home> {
  return eventually(
    "the dashboard to show the change",
    async () => {
      const home = await readHome(day);
      return landed(home) ? home : undefined;
    },
    20_000,
    250,
  );
}

/** A number for display: whole when it is, else one decimal. */
export function amount(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** Minutes as `7 h 30 min`. */
export function duration(minutes: number): string {
  const h = Math.floor(minutes / 60);
  const m = Math.round(minutes % 60);
  return h > 0 ? `${h} h ${m} min` : `${m} min`;
}

/** `YYYY-MM-DD` moved by `days` (calendar arithmetic on the date alone). */
export function addDays(day: string, days: number): string {
  const at = new Date(`${day}T00:00:00Z`);
  at.setUTCDate(at.getUTCDate() + days);
  return at.toISOString().slice(0, 10);
}
