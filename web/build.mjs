// Builds the web UI into the Python package (src/saber/server/static), so `pip install` ships a
// working page with nothing to build at run time. CI rebuilds and checks the output is unchanged.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "src", "saber", "server", "static");
mkdirSync(out, { recursive: true });

const common = { bundle: true, minify: true, legalComments: "none", logLevel: "warning", target: "es2020" };
await build({ ...common, entryPoints: [join(here, "src", "main.js")], format: "iife", outfile: join(out, "app.js") });
await build({ ...common, entryPoints: [join(here, "src", "style.css")], outfile: join(out, "app.css") });
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
