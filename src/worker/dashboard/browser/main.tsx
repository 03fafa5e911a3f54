/** The dashboard's browser entry: renders the app into the page's one element. */
import { render } from "hono/jsx/dom";
import { App } from "./app.js";
import "./style.css";

render(<App />, document.getElementById("app")!);
