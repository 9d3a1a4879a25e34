// inlay-demo.exe: the C# binding (Inlay.dll) in one program.
//
//     mono inlay-demo.exe [--device auto|cpu|cuda|cuda:N] [--prompt TEXT] [-n N] MODEL
//
// It loads MODEL with a progress bar on the chosen device, streams a greedy continuation
// of the prompt, cancels a second generation from another thread, holds a two-turn chat
// through the model's chat template, and shows how failures arrive: a missing file
// (Status.IO) and a device this build or machine lacks (Status.Unsupported, after which
// it continues on the CPU).
using System;
using System.Collections.Generic;
using System.Threading;
using Inlay;

static class Demo
{
    // Used for chat when the model has no template of its own (the default model in
    // models/ is a plain text model): "Q: ..." / "A: ..." lines, the form of the
    // question-and-answer fortunes it was trained on.
    const string FallbackTemplate =
        "{% for m in messages %}{% if m.role == 'user' %}Q: {% else %}A:{% endif %}" +
        "{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}";

    static int Main(string[] args)
    {
        string device = "auto", prompt = "You will", path = null;
        int n = 32;
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] == "--device" && i + 1 < args.Length) device = args[++i];
            else if (args[i] == "--prompt" && i + 1 < args.Length) prompt = args[++i];
            else if (args[i] == "-n" && i + 1 < args.Length && int.TryParse(args[i + 1], out n)) i++;
            else if (path == null && !args[i].StartsWith("-", StringComparison.Ordinal)) path = args[i];
            else path = null;
        }
        if (path == null || args.Length == 0)
        {
            Console.Error.WriteLine("usage: mono inlay-demo.exe [--device auto|cpu|cuda|cuda:N] [--prompt TEXT] [-n N] MODEL");
            return 2;
        }
        try
        {
            Run(path, device, prompt, n);
            return 0;
        }
        catch (InlayException e)
        {
            Console.Error.WriteLine("inlay-demo: " + e.Message);
            return 1;
        }
        catch (DllNotFoundException e)
        {
            Console.Error.WriteLine("inlay-demo: the inlay library was not found ({0}): set LD_LIBRARY_PATH to the " +
                                    "directory holding libinlay.so.1 (build/capi in a build tree)", e.Message);
            return 1;
        }
    }

    static bool ProgressBar(float p)
    {
        const int width = 30;
        int filled = (int)(p * width);
        Console.Error.Write("\rloading [{0}{1}] {2,3:0}%", new string('#', filled), new string('.', width - filled), p * 100);
        if (p >= 1) Console.Error.WriteLine();
        return true;
    }

    static Model Load(string path, string device)
    {
        int index;
        Device d = Model.ParseDevice(device, out index);
        try
        {
            return Model.Load(path, new ModelOptions { Device = d, DeviceIndex = index, Progress = ProgressBar });
        }
        catch (InlayException e) when (e.Status == Status.Unsupported && d == Device.Cuda)
        {
            Console.Error.WriteLine("\ndevice {0} is not available here ({1}); using the CPU instead", device, e.Message);
            return Model.Load(path, new ModelOptions { Device = Device.Cpu, Progress = ProgressBar });
        }
    }

    static void Run(string path, string device, string prompt, int n)
    {
        Console.WriteLine("== error handling: a file that does not exist");
        try
        {
            Model.Load("no-such-model.gguf").Dispose();
            throw new Exception("a missing file loaded");
        }
        catch (InlayException e) when (e.Status == Status.IO)
        {
            Console.WriteLine("load failed as expected: " + e.Message);
        }

        Console.WriteLine("\n== loading {0} (device {1})", path, device);
        using (Model model = Load(path, device))
        using (Session session = model.NewSession())
        {
            ModelInfo info = model.Info;
            Console.WriteLine("{0} model, {1} parameters, {2} layers, context {3}, running on {4}",
                              info.Architecture, info.Params, info.Layers, info.ContextLength, info.Device);

            Console.WriteLine("\n== streaming (greedy)");
            var greedy = new GenerateOptions { MaxTokens = n, Temperature = 0 };
            Console.Write(prompt);
            Result r = session.Generate(prompt, greedy, (token, piece) => { Console.Write(piece); return true; });
            Console.WriteLine("\n[{0} tokens, stop: {1}, {2:0} tokens/s]", r.Tokens.Length, r.StopReason,
                              r.Timings.DecodeTokensPerSecond);

            Console.WriteLine("\n== cancel from another thread (after 5 tokens)");
            session.Reset();
            var fifth = new ManualResetEventSlim();
            var canceller = new Thread(() => { fifth.Wait(); session.Cancel(); });
            canceller.Start();
            var sampled = new GenerateOptions { MaxTokens = 200, IgnoreEos = true };
            int count = 0;
            try
            {
                session.Generate(prompt, sampled, (token, piece) =>
                {
                    Console.Write(piece);
                    if (++count == 5) fifth.Set();
                    return true;
                });
                throw new Exception("the generation was not cancelled");
            }
            catch (InlayException e) when (e.Status == Status.Cancelled)
            {
                Console.WriteLine("\n[stopped after {0} of {1} tokens, stop: {2}, error: {3}]", e.Result.Tokens.Length,
                                  sampled.MaxTokens, e.Result.StopReason, e.Message);
            }
            canceller.Join();

            Console.WriteLine("\n== chat, two turns through the model's chat template");
            session.Reset();
            var chat = new ChatOptions();
            try
            {
                model.ApplyTemplate(new[] { new ChatMessage("user", "hi") });
            }
            catch (InlayException e) when (e.Status == Status.Missing)
            {
                Console.WriteLine("(the model has no chat template: {0}; using a Q:/A: template)", e.Message);
                chat.Template = FallbackTemplate;
            }
            var reply = new GenerateOptions { MaxTokens = 40, Temperature = 0, Stop = new[] { "\n" } };
            var conversation = new List<ChatMessage>();
            foreach (string question in new[] { "What will happen to me?", "And after that?" })
            {
                conversation.Add(new ChatMessage("user", question));
                Console.Write("user: {0}\nassistant:", question);
                Result answer = session.Chat(conversation, chat, reply, (token, piece) => { Console.Write(piece); return true; });
                Console.WriteLine("\n[processed {0} new prompt tokens; the conversation is {1} tokens]",
                                  answer.PromptTokens.Length, session.TokenCount);
                conversation.Add(new ChatMessage("assistant", answer.Text));
            }
        }
    }
}
