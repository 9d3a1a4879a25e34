// InlayTests.exe: the C# binding's tests, a plain program (no test framework is needed).
//
//     mono InlayTests.exe MODEL_FOLDER LAYOUT_FILE
//
// MODEL_FOLDER is the default model's folder (models/default); LAYOUT_FILE is the output
// of struct_layout (inlay.h's sizeof and offsetof). Each check that fails is printed;
// the exit status is the number of failures (0: all passed).
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;
using Inlay;

static class Tests
{
    static int failures, checks;
    static string modelPath;

    static void Check(bool ok, string what)
    {
        checks++;
        if (ok) return;
        failures++;
        Console.WriteLine("FAILED: " + what);
    }

    // Runs f and returns the InlayException it throws (null, and a failure, if none).
    static InlayException Throws(Status want, Action f, string what)
    {
        try { f(); }
        catch (InlayException e)
        {
            Check(e.Status == want, what + ": status " + e.Status + " (" + e.Message + "), want " + want);
            Check(e.Message.Length > 0, what + ": empty message");
            return e;
        }
        Check(false, what + ": no InlayException (want " + want + ")");
        return null;
    }

    static GenerateOptions Greedy(int n) { return new GenerateOptions { MaxTokens = n, Temperature = 0 }; }
    static GenerateOptions Long() { var o = Greedy(200); o.IgnoreEos = true; return o; }

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: mono InlayTests.exe MODEL_FOLDER LAYOUT_FILE");
            return 2;
        }
        modelPath = args[0];
        var tests = new Action[] {
            () => StructLayout(args[1]), Defaults, MissingFile, BadArguments, Devices, Progress,
            Tokenize, StreamingEqualsNonStreaming, CancelFromAnotherThread, CancellationToken, CallbackStopsAndThrows,
            ChatSecondTurnSeesTheFirst, DisposeFreesHandles, FinalizerFreesForgottenSessions
        };
        foreach (Action test in tests)
        {
            string name = test.Method.Name.StartsWith("<", StringComparison.Ordinal) ? "StructLayout" : test.Method.Name;
            int before = failures;
            try { test(); }
            catch (Exception e) { failures++; Console.WriteLine("FAILED: " + name + " threw " + e); }
            Console.WriteLine("{0} {1}", failures == before ? "ok  " : "FAIL", name);
        }
        Console.WriteLine("{0} checks, {1} failed", checks, failures);
        return Math.Min(failures, 100);
    }

    // Every struct and field of Inlay/Native.cs against inlay.h as the C compiler lays it out.
    static void StructLayout(string layoutFile)
    {
        var fieldsSeen = new Dictionary<string, int>();
        int lines = 0;
        foreach (string line in File.ReadAllLines(layoutFile))
        {
            string[] parts = line.Split(' ');
            string[] name = parts[0].Split('.');
            int expected = int.Parse(parts[1]);
            Type t = typeof(Model).Assembly.GetType("Inlay.Native+" + name[0]);
            lines++;
            if (t == null) { Check(false, name[0] + " is not declared"); continue; }
            if (name.Length == 1)
            {
                Check(Marshal.SizeOf(t) == expected, name[0] + ": size " + Marshal.SizeOf(t) + ", inlay.h " + expected);
                continue;
            }
            fieldsSeen[name[0]] = (fieldsSeen.ContainsKey(name[0]) ? fieldsSeen[name[0]] : 0) + 1;
            if (t.GetField(name[1], BindingFlags.Public | BindingFlags.Instance) == null)
            {
                Check(false, parts[0] + " is not declared");
                continue;
            }
            int offset = (int)Marshal.OffsetOf(t, name[1]);
            Check(offset == expected, parts[0] + ": offset " + offset + ", inlay.h " + expected);
        }
        Check(lines > 50, "the layout file has " + lines + " lines");
        foreach (var kv in fieldsSeen)
        {
            Type t = typeof(Model).Assembly.GetType("Inlay.Native+" + kv.Key);
            int declared = t.GetFields(BindingFlags.Public | BindingFlags.Instance).Length;
            Check(declared == kv.Value, kv.Key + ": " + declared + " fields declared, struct_layout lists " + kv.Value);
        }
    }

    static void Defaults()
    {
        var o = new GenerateOptions();
        Check(o.MaxTokens == 256 && o.Temperature == 0.8f && o.TopK == 40 && o.TopP == 0.95f && o.MinP == 0.05f &&
              o.Seed == ulong.MaxValue && o.AddBos && o.ParseSpecial && !o.IgnoreEos,
              "GenerateOptions' defaults differ from inlay.h's");
        Check(Model.AbiVersion == 1, "ABI version " + Model.AbiVersion);
        Check(InlayException.StatusName(Status.IO) == "INLAY_ERR_IO", "status name " + InlayException.StatusName(Status.IO));
    }

    static void MissingFile()
    {
        string missing = Path.Combine(Path.GetTempPath(), "inlay-absent-" + Guid.NewGuid() + ".gguf");
        InlayException e = Throws(Status.IO, () => Model.Load(missing), "loading a missing file");
        Check(e != null && e.Message.Contains(Path.GetFileName(missing)), "the message does not name the file");
    }

    static void BadArguments()
    {
        int index;
        Throws(Status.InvalidArgument, () => Model.ParseDevice("gpu", out index), "device gpu");
        Throws(Status.InvalidArgument, () => Model.Load(modelPath, new ModelOptions { Device = (Device)7 }), "device 7");
        Throws(Status.InvalidArgument, () => Model.Load("bad\0path"), "a NUL in the path");
        using (Model m = Model.Load(modelPath))
        using (Session s = m.NewSession())
        {
            Throws(Status.InvalidArgument, () => s.Generate("x", Greedy(-1)), "max_tokens -1");
            var o = Greedy(4);
            o.Stop = new[] { "" };
            Throws(Status.InvalidArgument, () => s.Generate("x", o), "an empty stop string");
            Throws(Status.InvalidArgument, () => m.NewSession(-1), "context length -1");
            Throws(Status.InvalidArgument, () => s.Generate(null), "a null prompt");
            Result r = s.Generate("You will", Greedy(4));
            Check(r.Tokens.Length > 0, "the session after failures generated nothing");
        }
    }

    static void Devices()
    {
        using (Model cpu = Model.Load(modelPath, new ModelOptions { Device = Device.Cpu }))
            Check(cpu.Info.Device == "cpu", "a cpu model runs on " + cpu.Info.Device);
        try
        {
            using (Model cuda = Model.Load(modelPath, new ModelOptions { Device = Device.Cuda }))
                Check(cuda.Info.Device.StartsWith("cuda", StringComparison.Ordinal), "a cuda model runs on " + cuda.Info.Device);
        }
        catch (InlayException e)
        {
            Check(e.Status == Status.Unsupported, "cuda: " + e.Status + ", want Unsupported");
            Check(e.Message.ToLowerInvariant().Contains("cuda"), "the message '" + e.Message + "' does not say what is missing");
        }
    }

    static void Progress()
    {
        var seen = new List<float>();
        using (Model.Load(modelPath, new ModelOptions { Progress = p => { seen.Add(p); return true; } })) { }
        Check(seen.Count >= 2 && seen[seen.Count - 1] == 1f, "progress does not end at 1: " + string.Join(",", seen));
        for (int i = 1; i < seen.Count; i++) Check(seen[i] >= seen[i - 1], "progress went back at " + i);
        Throws(Status.Cancelled, () => Model.Load(modelPath, new ModelOptions { Progress = p => false }), "an aborted load");
    }

    static void Tokenize()
    {
        using (Model m = Model.Load(modelPath))
        {
            int[] t = m.Tokenize("You will", true);
            Check(t.Length > 1 && t[0] == m.Info.BosToken, "'You will' with BOS: " + string.Join(",", t));
            Check(m.Tokenize("You will", false).SequenceEqual(t.Skip(1)), "without BOS it is not the same tokens");
            Check(m.Tokenize("", false).Length == 0, "the empty text has tokens");
        }
    }

    static void StreamingEqualsNonStreaming()
    {
        using (Model m = Model.Load(modelPath))
        using (Session a = m.NewSession())
        using (Session b = m.NewSession())
        {
            Result plain = a.Generate("You will", Greedy(40));
            var text = new System.Text.StringBuilder();
            var tokens = new List<int>();
            Result streamed = b.Generate("You will", Greedy(40), (tok, piece) =>
            {
                text.Append(piece);
                if (tok >= 0) tokens.Add(tok); // -1: the final flush of held-back text
                return true;
            });
            Check(plain.Tokens.Length > 0 && plain.Text.Length > 0, "nothing was generated");
            Check(streamed.Text == plain.Text && text.ToString() == plain.Text,
                  "streamed '" + text + "', result '" + streamed.Text + "', non-streaming '" + plain.Text + "'");
            // The end-of-generation token ends the result's tokens but has no text to stream.
            int[] want = plain.StopReason == StopReason.Eog ? plain.Tokens.Take(plain.Tokens.Length - 1).ToArray() : plain.Tokens;
            Check(tokens.SequenceEqual(want) && streamed.Tokens.SequenceEqual(plain.Tokens), "the streamed tokens differ");
        }
    }

    static void CancelFromAnotherThread()
    {
        using (Model m = Model.Load(modelPath))
        using (Session s = m.NewSession())
        {
            var third = new ManualResetEventSlim();
            var cancelled = new ManualResetEventSlim();
            var thread = new Thread(() => { third.Wait(); s.Cancel(); cancelled.Set(); });
            thread.Start();
            int n = 0;
            InlayException e = Throws(Status.Cancelled, () => s.Generate("You will", Long(), (tok, piece) =>
            {
                if (++n == 3)
                {
                    third.Set();
                    cancelled.Wait(); // the cancel has returned before token 4
                }
                return true;
            }), "cancel from another thread");
            thread.Join();
            Check(e != null && e.Result != null && e.Result.StopReason == StopReason.Cancelled, "no cancelled result");
            Check(e != null && e.Result != null && e.Result.Tokens.Length >= 3 && e.Result.Tokens.Length <= 4,
                  "tokens after a cancel at the third: " + (e != null && e.Result != null ? e.Result.Tokens.Length : -1));
            Check(e != null && !(e.InnerException is OperationCanceledException), "Cancel() came back as a token's cancellation");
            s.Cancel(); // ignored while idle
            Result r = s.Generate(" and", Greedy(5));
            Check(r.StopReason != StopReason.Cancelled, "an idle cancel stopped the next call");
        }
    }

    static void CancellationToken()
    {
        using (Model m = Model.Load(modelPath))
        using (Session s = m.NewSession())
        using (var cts = new CancellationTokenSource())
        {
            var third = new ManualResetEventSlim();
            var cancelled = new ManualResetEventSlim();
            var thread = new Thread(() => { third.Wait(); cts.Cancel(); cancelled.Set(); });
            thread.Start();
            int n = 0;
            // Cancelled during the callback of the last token max_tokens allows, so that no
            // later token's check could cancel it: the registration cancelled the call itself.
            var three = Greedy(3);
            three.IgnoreEos = true;
            InlayException e = Throws(Status.Cancelled, () => s.Generate("You will", three, (tok, piece) =>
            {
                if (++n == 3)
                {
                    third.Set();
                    cancelled.Wait(); // Cancel() ran the registration, which cancelled the call
                }
                return true;
            }, cts.Token), "a token cancelled from another thread");
            thread.Join();
            Check(e != null && e.InnerException is OperationCanceledException, "the exception does not carry the token's cancellation");
            Check(e != null && e.Result != null && e.Result.StopReason == StopReason.Cancelled && e.Result.Tokens.Length == 3,
                  "tokens after the token's cancel at the last: " + (e != null && e.Result != null ? e.Result.Tokens.Length : -1));

            // From another thread while tokens keep coming: stopped early.
            using (var later = new CancellationTokenSource())
            {
                s.Reset();
                int k = 0;
                var fifth = new ManualResetEventSlim();
                var t = new Thread(() => { fifth.Wait(); later.Cancel(); });
                t.Start();
                e = Throws(Status.Cancelled, () => s.Generate("You will", Long(), (tok, piece) =>
                {
                    if (++k == 5) fifth.Set();
                    return true;
                }, later.Token), "a token cancelled while generating");
                t.Join();
                Check(e != null && e.Result != null && e.Result.StopReason == StopReason.Cancelled &&
                      e.Result.Tokens.Length >= 5 && e.Result.Tokens.Length < 200, "the token did not stop the call early");
            }

            // A token cancelled before the call: stopped at its first token.
            s.Reset();
            e = Throws(Status.Cancelled, () => s.Generate("You will", Long(), null, cts.Token), "an already cancelled token");
            Check(e != null && e.Result != null && e.Result.Tokens.Length <= 2, "an already cancelled token let the call run");
        }
    }

    static void CallbackStopsAndThrows()
    {
        using (Model m = Model.Load(modelPath))
        using (Session s = m.NewSession())
        {
            int n = 0;
            Result r = s.Generate("You will", Long(), (tok, piece) => ++n < 2);
            Check(r.StopReason == StopReason.Callback && r.Tokens.Length == 2, "a callback's false: " + r.StopReason);
            InlayException inner = null;
            Throws(Status.Cancelled, () => s.Generate("", Long(), (tok, piece) =>
            {
                try { s.Generate("x", Greedy(1)); }
                catch (InlayException e) { inner = e; }
                s.Cancel();
                return true;
            }), "cancel from inside the callback");
            Check(inner != null && inner.Status == Status.Busy, "a call inside the callback: " + (inner == null ? "none" : inner.Status.ToString()));
            try
            {
                s.Generate(" and", Long(), (tok, piece) => { throw new InvalidOperationException("boom"); });
                Check(false, "the callback's exception was lost");
            }
            catch (InvalidOperationException e) { Check(e.Message == "boom", "rethrown " + e.Message); }
            Check(s.Generate(" then", Greedy(3)).Tokens.Length > 0, "the session after an exception");
        }
    }

    const string Template = "{% for m in messages %}{% if m.role == 'user' %}Q: {% else %}A:{% endif %}" +
                            "{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}";

    static void ChatSecondTurnSeesTheFirst()
    {
        using (Model plain = Model.Load(modelPath))
            Check(plain.ApplyTemplate(new[] { new ChatMessage("user", "hi") }) == "Q: hi\nA:",
                  "the default model's own (Q/A) template");

        // The default model's folder with a chat_template.jinja of its own.
        string dir = Path.Combine(Path.GetTempPath(), "inlay-cs-chat-" + Guid.NewGuid());
        Directory.CreateDirectory(dir);
        try
        {
            foreach (string f in Directory.GetFiles(modelPath)) File.Copy(f, Path.Combine(dir, Path.GetFileName(f)));
            File.WriteAllText(Path.Combine(dir, "chat_template.jinja"), Template);
            using (Model m = Model.Load(dir))
            using (Session s = m.NewSession())
            using (Session fresh = m.NewSession())
            {
                var reply = Greedy(24);
                reply.Stop = new[] { "\n" };
                var conv = new List<ChatMessage> { new ChatMessage("user", "What will happen to me?") };
                Result first = s.Chat(conv, null, reply);
                Check(first.Text.Length > 0, "turn 1 said nothing");
                int after1 = s.TokenCount;
                conv.Add(new ChatMessage("assistant", first.Text));
                conv.Add(new ChatMessage("user", "And after that?"));
                string rendered = m.ApplyTemplate(conv);
                Check(rendered == m.ApplyTemplate(conv, new ChatOptions { Template = Template }),
                      "the model's template and the same template given differ");
                Check(rendered == "Q: What will happen to me?\nA:" + first.Text + "\nQ: And after that?\nA:", "rendered " + rendered);
                Result second = s.Chat(conv, null, reply);
                int full = m.Tokenize(rendered, true).Length;
                Check(second.PromptTokens.Length > 0 && second.PromptTokens.Length < full - after1 + 2,
                      "turn 2 processed " + second.PromptTokens.Length + " of " + full + " tokens (" + after1 + " after turn 1)");
                Result again = fresh.Chat(conv, null, reply);
                Check(again.Text == second.Text && again.PromptTokens.Length == full,
                      "a fresh session replied '" + again.Text + "', the continued one '" + second.Text + "'");
            }
        }
        finally { Directory.Delete(dir, true); }
    }

    static void DisposeFreesHandles()
    {
        int live = ModelHandleLive();
        Model m = Model.Load(modelPath);
        Check(ModelHandleLive() == live + 1, "a loaded model is not counted");
        Session a = m.NewSession(), b = m.NewSession();
        Check(m.OpenSessions == 2, m.OpenSessions + " sessions open, want 2");
        a.Dispose();
        a.Dispose(); // twice is harmless
        Check(m.OpenSessions == 1, m.OpenSessions + " sessions open after Dispose, want 1");
        try { a.Generate("x", Greedy(1)); Check(false, "a disposed session generated"); }
        catch (ObjectDisposedException) { }
        // The model outlives its sessions: disposing it frees it with its last one.
        m.Dispose();
        Check(ModelHandleLive() == live + 1, "the model was freed under an open session");
        Check(b.Generate("You will", Greedy(3)).Tokens.Length > 0, "the open session after model.Dispose");
        try { m.NewSession(); Check(false, "a disposed model opened a session"); }
        catch (ObjectDisposedException) { }
        b.Dispose();
        Check(ModelHandleLive() == live, "the model was not freed with its last session");
    }

    static int ModelHandleLive()
    {
        return (int)typeof(Model).Assembly.GetType("Inlay.ModelHandle")
            .GetProperty("Live", BindingFlags.Static | BindingFlags.NonPublic).GetValue(null);
    }

    static void FinalizerFreesForgottenSessions()
    {
        using (Model m = Model.Load(modelPath))
        {
            // On a thread of their own, so that no stack slot of this one still points at them.
            var t = new Thread(() => { for (int i = 0; i < 3; i++) m.NewSession(); });
            t.Start();
            t.Join();
            for (int i = 0; i < 20 && m.OpenSessions > 0; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            Check(m.OpenSessions == 0, m.OpenSessions + " forgotten sessions still open");
        }
    }
}
