/* Create Job: keeps the common fields and the JSON document in step, converts a pasted v1
   jobDefinition through the server, validates on request and warns about shell operators.
   Without this file the document alone is submitted (and "Apply fields" rewrites it). */
(function () {
  "use strict";

  var FIELD_PATHS = {
    name: "name",
    image: "request.docker.image",
    command: "request.docker.command",
    gpus: "request.resources.gpus",
    cpus: "request.resources.cpus",
    cpu_memory_gb: "request.resources.cpuMemoryGb",
    gpu_model: "request.resources.gpuModel",
    cluster: "request.resources.clusterId",
    min_duration: "request.scheduling.minDuration",
    max_duration: "request.scheduling.maxDuration",
    interactive: "request.scheduling.interactive",
    restartable: "request.scheduling.restartable",
    reservations: "request.scheduling.reservationIds"
  };
  var INTEGER_FIELDS = { gpus: 1, cpus: 1, cpu_memory_gb: 1 };
  var SHELL_OPERATORS = ["&&", "||", "$(", "|", ">", "<", ";", "`"];
  var SHELL_WRAPPER = /^\s*(\/usr)?(\/bin\/)?(ba|da|z)?sh\s+(-\w*\s+)*-\w*c\b/;

  var form = document.getElementById("job-form");
  if (!form) return;
  var editor = document.getElementById("id_document");
  var status = document.getElementById("editor-status");
  var errorList = document.getElementById("job-json-errors");
  var warningBox = document.getElementById("command-warning");
  var convertUrl = form.getAttribute("data-convert-url");
  var templates = JSON.parse(document.getElementById("job-templates").textContent);
  var lastConverted = null;
  var timer = null;

  /* The code editor (CodeMirror 5, vendored): line numbers, errors marked at their line. The
     textarea stays the form's value: every change is copied back and announced as "input". */
  var cm = null;
  var errorMarks = [];
  if (window.CodeMirror) {
    cm = window.CodeMirror.fromTextArea(editor, {
      mode: { name: "javascript", json: true },
      lineNumbers: true,
      gutters: ["CodeMirror-linenumbers", "json-error-gutter"],
      indentUnit: 2,
      tabSize: 2,
      lineWrapping: false,
      screenReaderLabel: "Job document (JSON)",
      extraKeys: { Tab: false, "Shift-Tab": false }  /* Tab leaves the editor (keyboard users) */
    });
    cm.on("change", function (_cm, change) {
      if (change.origin === "setValue") return;
      cm.save();
      editor.dispatchEvent(new Event("input", { bubbles: true }));
    });
    cm.getWrapperElement().id = "job-editor";
  }

  /* Write the document's text (conversion, fields, templates, uploads). */
  function setText(text) {
    editor.value = text;
    if (cm && cm.getValue() !== text) {
      var cursor = cm.getCursor();
      cm.setValue(text);
      cm.setCursor(cursor);
    }
  }

  document.documentElement.classList.add("job-editor-js");
  var apply = document.getElementById("apply-fields");
  if (apply) apply.hidden = true;
  var noJsNote = document.getElementById("nojs-note");
  if (noJsNote) noJsNote.hidden = true;
  document.getElementById("job-validate").hidden = false;

  /* Enter in a field edits the document; it does not submit the job. */
  form.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && event.target.matches("input[data-doc-field]")) event.preventDefault();
  });

  function field(name) { return form.querySelector('[data-doc-field="' + name + '"]'); }

  function say(text, kind) {
    status.textContent = text || "";
    status.className = "editor-status " + (kind ? "text-" + kind : "text-body-secondary");
  }

  function getPath(doc, path) {
    var value = doc;
    var keys = path.split(".");
    for (var i = 0; i < keys.length; i++) {
      if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
      value = value[keys[i]];
    }
    return value;
  }

  function setPath(doc, path, value, remove) {
    var keys = path.split(".");
    var target = doc;
    for (var i = 0; i < keys.length - 1; i++) {
      if (target[keys[i]] === null || typeof target[keys[i]] !== "object" || Array.isArray(target[keys[i]])) {
        if (remove) return;
        target[keys[i]] = {};
      }
      target = target[keys[i]];
    }
    if (remove) delete target[keys[keys.length - 1]];
    else target[keys[keys.length - 1]] = value;
  }

  function parse(text) {
    try {
      var doc = JSON.parse(text);
      return doc !== null && typeof doc === "object" && !Array.isArray(doc) ? doc : null;
    } catch (e) {
      return null;
    }
  }

  function commandValue(text) {
    var trimmed = text.trim();
    if (trimmed.charAt(0) === "[") {
      try {
        var list = JSON.parse(trimmed);
        if (Array.isArray(list) && list.every(function (x) { return typeof x === "string"; })) return list;
      } catch (e) { /* a string after all */ }
    }
    return trimmed;
  }

  /* one field -> the document */
  /* A name of one's own makes a new job: an example's description ("Hello world!") is not its
     (jobs.web.forms.apply_fields drops it the same way without JavaScript). */
  function dropExampleDescription(doc) {
    var examples = Object.keys(templates).map(function (key) { return templates[key].description; });
    if (typeof doc.description === "string" && examples.indexOf(doc.description) >= 0) delete doc.description;
  }

  function writeField(doc, name) {
    var el = field(name);
    var path = FIELD_PATHS[name];
    if (name === "name" && el.value !== doc.name) dropExampleDescription(doc);
    if (el.type === "checkbox") return setPath(doc, path, el.checked);
    if (el.multiple) {  /* reservations: chosen by name, written as their ids */
      var chosen = Array.prototype.map.call(el.selectedOptions, function (o) { return o.value; });
      return chosen.length ? setPath(doc, path, chosen) : setPath(doc, path, null, true);
    }
    var raw = el.value;
    if (name === "command") return setPath(doc, path, commandValue(raw));
    if (name === "gpu_model") {
      return setPath(doc, path, raw.split(",").map(function (s) { return s.trim(); }).filter(Boolean));
    }
    if (name === "cluster") return setPath(doc, path, raw === "" ? null : parseInt(raw, 10));
    if (INTEGER_FIELDS[name]) {
      if (raw.trim() === "") return;
      var number = Number(raw);
      return setPath(doc, path, Number.isInteger(number) ? number : raw);
    }
    if ((name === "min_duration" || name === "max_duration") && raw.trim() === "") {
      return setPath(doc, path, null, true);
    }
    setPath(doc, path, raw);
  }

  /* the document -> every field except the one being edited */
  function readFields(doc) {
    Object.keys(FIELD_PATHS).forEach(function (name) {
      var el = field(name);
      if (!el || el === document.activeElement) return;
      var value = getPath(doc, FIELD_PATHS[name]);
      if (el.type === "checkbox") { el.checked = value === true; return; }
      if (el.multiple) {
        var ids = (Array.isArray(value) ? value : []).map(function (v) { return String(v).toLowerCase(); });
        Array.prototype.forEach.call(el.options, function (o) { o.selected = ids.indexOf(o.value) >= 0; });
        return;
      }
      if (name === "command") value = Array.isArray(value) ? (value.length ? JSON.stringify(value) : "") : value;
      else if (name === "gpu_model") value = Array.isArray(value) ? value.join(", ") : value;
      if (value === undefined || value === null) value = "";
      value = String(value);
      if (el.tagName === "SELECT" && value !== "" && !el.querySelector('option[value="' + CSS.escape(value) + '"]')) {
        var option = document.createElement("option");
        option.value = value;
        option.textContent = value + " (not registered)";
        el.appendChild(option);
      }
      el.value = value;
    });
    updateWarning(doc);
  }

  function commandWarnings(command) {
    if (typeof command !== "string" || !command.trim() || SHELL_WRAPPER.test(command)) return [];
    var found = SHELL_OPERATORS.filter(function (op) { return command.indexOf(op) >= 0; });
    if (found.indexOf("||") >= 0) found = found.filter(function (op) { return op !== "|"; });
    if (!found.length) return [];
    return ["The command uses shell operators (" + found.join(" ") + ") but is not run through a " +
      "shell: Docker passes them to the program as plain arguments. Wrap it: bash -c '" + command.trim() + "'"];
  }

  function updateWarning(doc) {
    var warnings = commandWarnings(getPath(doc, "request.docker.command"));
    warningBox.hidden = !warnings.length;
    warningBox.querySelector("span").textContent = warnings.join(" ");
  }

  function setDocument(doc) {
    setText(JSON.stringify(doc, null, 2));
    fieldsInvalid(false);
    readFields(doc);
  }

  /* While the document is not JSON the fields cannot show its values: they are cleared and
     paused, with a note, instead of showing stale ones. */
  var fieldsNote = document.getElementById("fields-invalid");
  function fieldsInvalid(invalid) {
    if (fieldsNote) fieldsNote.hidden = !invalid;
    Object.keys(FIELD_PATHS).forEach(function (name) {
      var el = field(name);
      if (!el) return;
      if (invalid && !el.disabled) {
        if (el.type === "checkbox") el.checked = false;
        else if (el.tagName !== "SELECT") el.value = "";
      }
      el.disabled = invalid;
    });
  }

  function clearMarks() {
    if (!cm) return;
    errorMarks.forEach(function (mark) {
      if (mark.widget) mark.widget.clear();
      cm.removeLineClass(mark.line, "background", "cm-json-error-line");
    });
    errorMarks = [];
    cm.clearGutter("json-error-gutter");
  }

  /* An error at its line: a marker in the gutter, the line tinted, the message under it. */
  function markLine(error) {
    if (!cm || !error.line) return;
    var line = Math.min(error.line - 1, cm.lineCount() - 1);
    var marker = document.createElement("span");
    marker.className = "json-error-marker";
    marker.textContent = "●";
    marker.title = error.message;
    cm.setGutterMarker(line, "json-error-gutter", marker);
    cm.addLineClass(line, "background", "cm-json-error-line");
    var note = document.createElement("div");
    note.className = "json-error-widget";
    note.setAttribute("data-error-line", String(error.line));
    note.textContent = "Line " + error.line + ": " + error.message.replace(/^invalid JSON at line \d+ column \d+: /, "");
    errorMarks.push({ line: line, widget: cm.addLineWidget(line, note) });
  }

  function clearErrors() {
    clearMarks();
    errorList.innerHTML = "";
    errorList.hidden = true;
    form.querySelectorAll(".is-invalid[data-doc-field]").forEach(function (el) { el.classList.remove("is-invalid"); });
    form.querySelectorAll(".js-feedback").forEach(function (el) { el.remove(); });
  }

  function showErrors(errors) {
    clearErrors();
    if (!errors.length) return;
    errorList.hidden = false;
    errors.forEach(function (error) {
      var item = document.createElement("li");
      item.className = "list-group-item list-group-item-danger py-1";
      var code = document.createElement("code");
      code.textContent = error.path;
      item.appendChild(code);
      item.appendChild(document.createTextNode(": " + error.message));
      if (error.line) {
        item.setAttribute("role", "button");
        item.title = "Go to line " + error.line + ", column " + error.column;
        item.addEventListener("click", function () { goTo(error.line, error.column); });
      }
      errorList.appendChild(item);
      markLine(error);
      if (error.field && field(error.field)) {
        var el = field(error.field);
        el.classList.add("is-invalid");
        var feedback = document.createElement("div");
        feedback.className = "invalid-feedback js-feedback";
        feedback.textContent = error.path + ": " + error.message;
        el.insertAdjacentElement("afterend", feedback);
      }
    });
  }

  function goTo(line, column) {
    if (cm) {
      cm.focus();
      cm.setCursor({ line: line - 1, ch: Math.max(0, column - 1) });
      cm.scrollIntoView(null, 80);
      return;
    }
    var lines = editor.value.split("\n");
    var position = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i++) position += lines[i].length + 1;
    position += Math.max(0, column - 1);
    editor.focus();
    editor.setSelectionRange(position, position + 1);
    var lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 16;
    editor.scrollTop = Math.max(0, (line - 5) * lineHeight);
  }

  function ask(text) {
    var body = new FormData();
    body.append("document", text);
    body.append("csrfmiddlewaretoken", form.querySelector("[name=csrfmiddlewaretoken]").value);
    return fetch(convertUrl, {
      method: "POST",
      body: body,
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin"
    }).then(function (response) {
      if (!response.ok) throw new Error("the server answered " + response.status);
      return response.json();
    });
  }

  function convert(text) {
    if (text === lastConverted) return;
    lastConverted = text;
    say("Converting the v1 jobDefinition…");
    ask(text).then(function (answer) {
      if (answer.document) {
        var doc = parse(answer.document);
        if (doc) setDocument(doc);
        lastConverted = editor.value;
      }
      showErrors(answer.errors || []);
      if (answer.converted) {
        say(answer.ok ? "Converted from a v1 jobDefinition to v2." :
          "Converted from a v1 jobDefinition to v2; fix the errors below.", answer.ok ? "success" : "danger");
      } else if (!answer.ok) {
        say("The document has errors.", "danger");
      }
    }).catch(function (error) { say("Could not convert: " + error.message, "danger"); });
  }

  /* An OpenPAI job config: no "request"/"jobDefinition", but "jobName" or "taskRoles". */
  function isOpenPai(doc) {
    return doc !== null && doc.request === undefined && doc.jobDefinition === undefined &&
      (doc.taskRoles !== undefined || doc.jobName !== undefined);
  }

  /* A sweep or array body pasted whole ({"template", "variations"} or {"jobs"}): submitted as
     one array; the common fields do not apply (jobs/spec/array.py, is_array_body). */
  function isSweepDocument(doc) {
    return doc !== null && doc.request === undefined && doc.jobDefinition === undefined &&
      (doc.template !== undefined || doc.variations !== undefined || doc.jobs !== undefined);
  }

  function inspectSweep(text) {
    if (text === lastConverted) return;
    lastConverted = text;
    ask(text).then(function (answer) {
      if (editor.value !== text) return;
      showErrors(answer.errors || []);
      say(answer.ok ? answer.notice : "The sweep has errors.", answer.ok ? "success" : "danger");
    }).catch(function (error) { say("Could not check: " + error.message, "danger"); });
  }

  var rolesBox = document.getElementById("openpai-roles");

  function showRoles(roles, runnable) {
    if (!rolesBox) return;
    var body = rolesBox.querySelector("tbody");
    body.innerHTML = "";
    (roles || []).forEach(function (role) {
      var row = document.createElement("tr");
      ["name", "taskNumber", "cpuNumber", "memoryMB", "shmMB", "gpuNumber", "ports", "command"].forEach(function (key) {
        var cell = document.createElement("td");
        if (key === "name" || key === "ports") cell.className = "text-nowrap";
        var text = String(role[key] === undefined || role[key] === null ? "" : role[key]);
        if (key === "command") {
          var code = document.createElement("code");
          code.textContent = text.length > 80 ? text.slice(0, 79) + "…" : text;
          cell.appendChild(code);
        } else {
          cell.textContent = text;
        }
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
    document.getElementById("openpai-roles-note").textContent = runnable ?
      "One task role of one task: it runs as one job." :
      "Several tasks: they run as one job, all tasks started together (see docs/openpai.md).";
    rolesBox.hidden = !(roles && roles.length);
  }

  function inspectOpenPai(text) {
    if (text === lastConverted) return;
    lastConverted = text;
    say("Reading the OpenPAI job config…");
    ask(text).then(function (answer) {
      showErrors(answer.errors || []);
      showRoles(answer.taskRoles, answer.runnable);
      say(answer.ok ? answer.notice : "The OpenPAI config has errors.", answer.ok ? "success" : "danger");
    }).catch(function (error) { say("Could not check: " + error.message, "danger"); });
  }

  function fromEditor() {
    var doc = parse(editor.value);
    if (!doc) {
      fieldsInvalid(true);
      say("Not valid JSON: the fields follow once it parses.", "warning");
      /* The server's words and line ("trailing comma" at the comma, not the next line). */
      var text = editor.value;
      ask(text).then(function (answer) {
        if (editor.value === text) showErrors(answer.errors || []);
      }).catch(function () { /* the status line already says it is not JSON */ });
      return;
    }
    fieldsInvalid(false);
    clearErrors();
    if (isOpenPai(doc)) {
      inspectOpenPai(editor.value);
      return;
    }
    if (isSweepDocument(doc)) {
      if (rolesBox) rolesBox.hidden = true;
      inspectSweep(editor.value);
      return;
    }
    if (rolesBox) rolesBox.hidden = true;
    if (doc.jobDefinition !== undefined && doc.request === undefined) {
      convert(editor.value);
      return;
    }
    if (editor.value !== lastConverted) say("");
    readFields(doc);
  }

  form.addEventListener("input", function (event) {
    var name = event.target.getAttribute("data-doc-field");
    if (event.target === editor) {
      clearTimeout(timer);
      timer = setTimeout(fromEditor, 300);
      return;
    }
    if (!name) return;
    var doc = parse(editor.value);
    if (!doc) {
      say("Fix the JSON document first: fields write into it.", "warning");
      return;
    }
    if (isOpenPai(doc)) {
      say("This is an OpenPAI job config: the common fields apply to GPULab documents only.", "warning");
      return;
    }
    if (isSweepDocument(doc)) {
      say("This is a sweep document: edit its template in the document itself.", "warning");
      return;
    }
    writeField(doc, name);
    setText(JSON.stringify(doc, null, 2));
    updateWarning(doc);
    say("");
  });
  editor.addEventListener("paste", function () {
    clearTimeout(timer);
    setTimeout(fromEditor, 0);
  });

  document.getElementById("job-validate").addEventListener("click", function () {
    say("Checking…");
    ask(editor.value).then(function (answer) {
      showErrors(answer.errors || []);
      if (answer.converted && answer.document) {
        var doc = parse(answer.document);
        if (doc) setDocument(doc);
      }
      warningBox.hidden = !(answer.warnings || []).length;
      if ((answer.warnings || []).length) warningBox.querySelector("span").textContent = answer.warnings.join(" ");
      if (answer.kind === "array") {
        say(answer.ok ? answer.notice : "The sweep has errors.", answer.ok ? "success" : "danger");
        return;
      }
      if (answer.kind === "openpai") {
        showRoles(answer.taskRoles, answer.runnable);
        say(answer.ok ? answer.notice : "The OpenPAI config has errors.", answer.ok ? "success" : "danger");
        return;
      }
      say(answer.ok ? "The document is valid." : "The document has errors.", answer.ok ? "success" : "danger");
    }).catch(function (error) { say("Could not check: " + error.message, "danger"); });
  });

  document.querySelectorAll("a[data-template]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      var doc = templates[link.getAttribute("data-template")];
      if (!doc) return;
      event.preventDefault();
      clearErrors();
      setDocument(JSON.parse(JSON.stringify(doc)));
      say("Loaded the " + link.textContent.trim() + " template.", "success");
    });
  });

  document.querySelectorAll("[data-goto-line]").forEach(function (el) {
    el.addEventListener("click", function () {
      goTo(parseInt(el.getAttribute("data-goto-line"), 10), parseInt(el.getAttribute("data-goto-column"), 10));
    });
  });

  /* An uploaded file goes into the editor (and is then the document, as if pasted). */
  var upload = document.getElementById("id_document_file");
  var uploadButton = document.getElementById("job-upload");
  if (upload && uploadButton) {
    /* With this script the file goes straight into the editor: a button opens the picker. */
    uploadButton.hidden = false;
    upload.classList.add("visually-hidden");
    upload.tabIndex = -1;
    uploadButton.addEventListener("click", function () { upload.click(); });
  }
  if (upload) {
    upload.addEventListener("change", function () {
      var file = upload.files && upload.files[0];
      if (!file) return;
      file.text().then(function (text) {
        setText(text.replace(/^\uFEFF/, ""));
        upload.value = "";  /* the editor's text is submitted, with any later edits */
        clearErrors();
        fromEditor();
        /* After fromEditor, which clears the status line for a plain v2 document. */
        if (!status.textContent) say("Read " + file.name + ".", "success");
      }).catch(function (error) { say("Could not read the file: " + error.message, "danger"); });
    });
  }

  var initial = parse(editor.value);
  if (initial && initial.request) updateWarning(initial);
  if (!initial && editor.value.trim()) fieldsInvalid(true);
})();
