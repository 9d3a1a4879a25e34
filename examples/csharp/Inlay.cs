// Inlay.cs: a C# binding of inlay's C ABI (P/Invoke declarations in Native.cs): Model and
// Session own SafeHandles, failures throw InlayException carrying the status, streaming
// goes through a delegate kept alive for the call, and Session.Cancel (or a
// CancellationToken) stops a call from any thread.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

[assembly: InternalsVisibleTo("InlayTests")]

namespace Inlay
{
    /// <summary>inlay_status.</summary>
    public enum Status
    {
        Ok = 0, InvalidArgument = 1, IO = 2, BadFormat = 3, Truncated = 4, Unsupported = 5, Missing = 6,
        ShapeMismatch = 7, OutOfMemory = 8, Cancelled = 9, ContextFull = 10, KvFull = 11, BufferTooSmall = 12,
        Busy = 13, InvalidToken = 14, InvalidUtf8 = 15, Internal = 99
    }

    /// <summary>inlay_stop_reason.</summary>
    public enum StopReason { None = 0, Eog = 1, MaxTokens = 2, StopString = 3, Callback = 4, Cancelled = 5, ContextFull = 6 }

    /// <summary>inlay_device.</summary>
    public enum Device { Auto = 0, Cpu = 1, Cuda = 2 }

    /// <summary>inlay_thinking.</summary>
    public enum Thinking { Default = 0, Off = 1, On = 2 }

    /// <summary>A failed inlay call: its status and the message of inlay_last_error. A
    /// cancelled or KV_FULL generation also carries what it produced in Result.</summary>
    public class InlayException : Exception
    {
        public Status Status { get; private set; }
        public Result Result { get; internal set; }

        public InlayException(Status status, string message, Exception inner = null) : base(message, inner)
        {
            Status = status;
        }

        /// <summary>The library's name of a status ("INLAY_ERR_IO", ...).</summary>
        public static string StatusName(Status status) { return Utf8.Decode(Native.inlay_status_name(status)); }

        // inlay_last_error is per thread; a P/Invoke runs on the calling thread, so the
        // message read right after the failing call is that call's.
        internal static void Check(Status status)
        {
            if (status != Status.Ok) throw new InlayException(status, Utf8.Decode(Native.inlay_last_error()));
        }

        internal static InlayException Invalid(string message)
        {
            return new InlayException(Status.InvalidArgument, "INLAY_ERR_INVALID_ARGUMENT: " + message);
        }
    }

    internal static class Utf8
    {
        // NUL-terminated UTF-8; a string with a NUL inside cannot cross the C ABI intact.
        internal static byte[] Encode(string s, string what)
        {
            if (s == null) throw InlayException.Invalid(what + " is null");
            if (s.IndexOf('\0') >= 0) throw InlayException.Invalid(what + " contains a NUL character");
            var bytes = new byte[Encoding.UTF8.GetByteCount(s) + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
            return bytes;
        }

        internal static string Decode(IntPtr p, int length)
        {
            if (p == IntPtr.Zero || length == 0) return "";
            var bytes = new byte[length];
            Marshal.Copy(p, bytes, 0, length);
            return Encoding.UTF8.GetString(bytes);
        }

        internal static string Decode(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            return Decode(p, n);
        }

        // Copies into unmanaged memory, recorded in `owned` for freeing.
        internal static IntPtr Alloc(string s, string what, List<IntPtr> owned)
        {
            byte[] bytes = Encode(s, what);
            IntPtr p = Marshal.AllocHGlobal(bytes.Length);
            owned.Add(p);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return p;
        }

        internal static void FreeAll(List<IntPtr> owned)
        {
            foreach (IntPtr p in owned) Marshal.FreeHGlobal(p);
            owned.Clear();
        }
    }

    /// <summary>Owns an inlay_model*. Sessions hold a reference to it (DangerousAddRef), so
    /// the native model is freed only after its last session, as inlay.h requires.</summary>
    internal sealed class ModelHandle : SafeHandle
    {
        static int live;
        internal static int Live { get { return Volatile.Read(ref live); } }

        ModelHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        internal void Counted() { Interlocked.Increment(ref live); }

        protected override bool ReleaseHandle()
        {
            Native.inlay_model_free(handle);
            Interlocked.Decrement(ref live);
            return true;
        }
    }

    /// <summary>Owns an inlay_session* and a reference to its model's handle.</summary>
    internal sealed class SessionHandle : SafeHandle
    {
        readonly ModelHandle model;

        internal SessionHandle(IntPtr session, ModelHandle model) : base(IntPtr.Zero, true)
        {
            this.model = model; // already AddRef'ed by the caller
            SetHandle(session);
        }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.inlay_session_free(handle);
            model.DangerousRelease();
            return true;
        }
    }

    public sealed class ModelOptions
    {
        public int Threads;        // 0 = every core
        public int ContextLength;  // 0 = the model's own
        public Device Device = Device.Auto;
        public int DeviceIndex;
        /// <summary>Load progress in [0, 1], on the loading thread; false aborts (Status.Cancelled).</summary>
        public Func<float, bool> Progress;
    }

    public struct ModelInfo
    {
        public string Architecture, Name, Device;
        public long Params, FileBytes;
        public int Vocab, Embd, Layers, Heads, KvHeads, HeadDim, FF, ContextLength, TrainContextLength, BosToken, EosToken;
    }

    /// <summary>A loaded model, shareable by many threads. Dispose it when done.</summary>
    public sealed class Model : IDisposable
    {
        readonly ModelHandle handle;
        volatile bool disposed; // the runtime's SafeHandle may still AddRef a disposed handle that sessions hold

        Model(ModelHandle handle) { this.handle = handle; }

        internal ModelHandle Handle
        {
            get
            {
                if (disposed) throw new ObjectDisposedException("Inlay.Model");
                return handle;
            }
        }

        public static string Version { get { return Utf8.Decode(Native.inlay_version()); } }
        public static int AbiVersion { get { return Native.inlay_abi_version(); } }

        public static Device ParseDevice(string name, out int index)
        {
            index = 0;
            if (name == "auto") return Device.Auto;
            if (name == "cpu") return Device.Cpu;
            if (name == "cuda") return Device.Cuda;
            if (name != null && name.StartsWith("cuda:", StringComparison.Ordinal) &&
                int.TryParse(name.Substring(5), out index) && index >= 0)
                return Device.Cuda;
            throw InlayException.Invalid("device '" + name + "' is not auto, cpu, cuda or cuda:N");
        }

        /// <summary>Loads a GGUF file or a Hugging Face folder.</summary>
        public static Model Load(string path, ModelOptions options = null)
        {
            options = options ?? new ModelOptions();
            byte[] cpath = Utf8.Encode(path, "the model path");
            var p = new Native.inlay_model_params();
            Native.inlay_model_params_init_size(ref p, Native.SizeOf<Native.inlay_model_params>());
            p.n_threads = options.Threads;
            p.context_length = options.ContextLength;
            p.device = (int)options.Device;
            p.device_index = options.DeviceIndex;
            Exception thrown = null;
            Native.ProgressFn progress = null;
            if (options.Progress != null)
            {
                // Exceptions must not cross the native frames: keep the first, stop, rethrow.
                progress = (value, user) =>
                {
                    try { return options.Progress(value); }
                    catch (Exception e) { thrown = thrown ?? e; return false; }
                };
                p.progress = Marshal.GetFunctionPointerForDelegate(progress);
            }
            ModelHandle handle;
            Status status = Native.inlay_model_load(cpath, ref p, out handle);
            GC.KeepAlive(progress); // the library calls it until load returns
            string message = status == Status.Ok ? null : Utf8.Decode(Native.inlay_last_error());
            if (status == Status.Ok) handle.Counted();
            if (thrown != null)
            {
                handle.Dispose();
                ExceptionDispatchInfo.Capture(thrown).Throw();
            }
            if (status != Status.Ok)
            {
                handle.Dispose();
                throw new InlayException(status, message);
            }
            return new Model(handle);
        }

        /// <summary>Releases the caller's reference: the native model is freed now, or with
        /// its last open session.</summary>
        public void Dispose()
        {
            disposed = true;
            handle.Dispose();
        }

        public ModelInfo Info
        {
            get
            {
                var i = new Native.inlay_model_info { struct_size = Native.SizeOf<Native.inlay_model_info>() };
                InlayException.Check(Native.inlay_model_get_info(Handle, ref i));
                return new ModelInfo
                {
                    Architecture = Utf8.Decode(i.architecture), Name = Utf8.Decode(i.name), Device = Utf8.Decode(i.device),
                    Params = i.n_params, FileBytes = i.file_bytes, Vocab = i.n_vocab, Embd = i.n_embd, Layers = i.n_layers,
                    Heads = i.n_heads, KvHeads = i.n_kv_heads, HeadDim = i.head_dim, FF = i.n_ff,
                    ContextLength = i.context_length, TrainContextLength = i.train_context_length,
                    BosToken = i.bos_token, EosToken = i.eos_token
                };
            }
        }

        /// <summary>Native sessions of this model that exist now (inlay_metrics.sessions).</summary>
        public int OpenSessions
        {
            get
            {
                var m = new Native.inlay_metrics { struct_size = Native.SizeOf<Native.inlay_metrics>() };
                InlayException.Check(Native.inlay_model_get_metrics(Handle, ref m));
                return m.sessions;
            }
        }

        /// <summary>Token ids of text (special-token text parsed; BOS where the vocabulary asks, if addBos).</summary>
        public int[] Tokenize(string text, bool addBos)
        {
            byte[] bytes = Utf8.Encode(text, "the text");
            var len = (UIntPtr)(bytes.Length - 1);
            uint flags = 2u | (addBos ? 1u : 0u); // INLAY_TOKENIZE_PARSE_SPECIAL | INLAY_TOKENIZE_ADD_BOS
            UIntPtr n;
            Status st = Native.inlay_tokenize(Handle, bytes, len, flags, null, UIntPtr.Zero, out n);
            if (st != Status.BufferTooSmall) InlayException.Check(st);
            if ((int)n == 0) return new int[0]; // capacity 0 would read as a size query again
            var tokens = new int[(int)n];
            InlayException.Check(Native.inlay_tokenize(Handle, bytes, len, flags, tokens, (UIntPtr)tokens.Length, out n));
            return tokens;
        }

        /// <summary>Renders the conversation with the chat template, as Session.Chat would.</summary>
        public string ApplyTemplate(IList<ChatMessage> messages, ChatOptions options = null)
        {
            var owned = new List<IntPtr>();
            try
            {
                Native.inlay_chat_message[] m = ChatMessage.ToNative(messages, owned);
                Native.inlay_chat_params p = ChatOptions.ToNative(options, owned);
                UIntPtr length;
                Status st = Native.inlay_chat_apply_template(Handle, m, (UIntPtr)m.Length, ref p, null, UIntPtr.Zero, out length);
                if (st != Status.BufferTooSmall) InlayException.Check(st);
                var text = new byte[(int)length + 1];
                InlayException.Check(Native.inlay_chat_apply_template(Handle, m, (UIntPtr)m.Length, ref p, text,
                                                                      (UIntPtr)text.Length, out length));
                return Encoding.UTF8.GetString(text, 0, (int)length);
            }
            finally { Utf8.FreeAll(owned); }
        }

        public Session NewSession(int contextLength = 0) { return new Session(this, contextLength); }
    }

    public sealed class GenerateOptions
    {
        public int MaxTokens;
        public float Temperature, TopP, MinP, RepeatPenalty, FrequencyPenalty, PresencePenalty;
        public int TopK, PenaltyLastN;
        public ulong Seed;
        public bool IgnoreEos, AddBos, ParseSpecial;
        public string[] Stop = new string[0];

        /// <summary>The library's defaults (inlay_generate_params_init).</summary>
        public GenerateOptions()
        {
            var p = new Native.inlay_generate_params();
            Native.inlay_generate_params_init_size(ref p, Native.SizeOf<Native.inlay_generate_params>());
            MaxTokens = p.max_tokens; Temperature = p.temperature; TopK = p.top_k; TopP = p.top_p; MinP = p.min_p;
            RepeatPenalty = p.repeat_penalty; FrequencyPenalty = p.frequency_penalty; PresencePenalty = p.presence_penalty;
            PenaltyLastN = p.penalty_last_n; Seed = p.seed; IgnoreEos = p.ignore_eos; AddBos = p.add_bos;
            ParseSpecial = p.parse_special;
        }

        internal Native.inlay_generate_params ToNative(List<IntPtr> owned)
        {
            var p = new Native.inlay_generate_params();
            Native.inlay_generate_params_init_size(ref p, Native.SizeOf<Native.inlay_generate_params>());
            p.max_tokens = MaxTokens; p.temperature = Temperature; p.top_k = TopK; p.top_p = TopP; p.min_p = MinP;
            p.repeat_penalty = RepeatPenalty; p.frequency_penalty = FrequencyPenalty; p.presence_penalty = PresencePenalty;
            p.penalty_last_n = PenaltyLastN; p.seed = Seed; p.ignore_eos = IgnoreEos; p.add_bos = AddBos;
            p.parse_special = ParseSpecial;
            if (Stop != null && Stop.Length > 0)
            {
                IntPtr array = Marshal.AllocHGlobal(IntPtr.Size * Stop.Length);
                owned.Add(array);
                for (int i = 0; i < Stop.Length; i++)
                    Marshal.WriteIntPtr(array, i * IntPtr.Size, Utf8.Alloc(Stop[i], "a stop string", owned));
                p.stop = array;
                p.n_stop = (UIntPtr)Stop.Length;
            }
            return p;
        }
    }

    public struct Timings
    {
        public long PromptTokens, GeneratedTokens, PromptTokensReused;
        public double PrefillSeconds, DecodeSeconds, PrefillTokensPerSecond, DecodeTokensPerSecond;
    }

    /// <summary>What a generate or chat call produced.</summary>
    public sealed class Result
    {
        public string Text;
        public int[] Tokens;        // generated
        public int[] PromptTokens;  // processed by this call
        public StopReason StopReason;
        public Timings Timings;

        static int[] Copy(IntPtr p, UIntPtr n)
        {
            var a = new int[(int)n];
            if (a.Length > 0) Marshal.Copy(p, a, 0, a.Length);
            return a;
        }

        // Copies an inlay_result and frees it.
        internal static Result Take(IntPtr r)
        {
            try
            {
                UIntPtr n, np;
                IntPtr tokens = Native.inlay_result_tokens(r, out n);
                IntPtr prompt = Native.inlay_result_prompt_tokens(r, out np);
                var t = new Native.inlay_timings { struct_size = Native.SizeOf<Native.inlay_timings>() };
                Native.inlay_result_timings(r, ref t);
                return new Result
                {
                    Text = Utf8.Decode(Native.inlay_result_text(r)), Tokens = Copy(tokens, n), PromptTokens = Copy(prompt, np),
                    StopReason = Native.inlay_result_stop_reason(r),
                    Timings = new Timings
                    {
                        PromptTokens = t.prompt_tokens, GeneratedTokens = t.generated_tokens,
                        PromptTokensReused = t.prompt_tokens_reused, PrefillSeconds = t.prefill_s, DecodeSeconds = t.decode_s,
                        PrefillTokensPerSecond = t.prefill_tokens_per_s, DecodeTokensPerSecond = t.decode_tokens_per_s
                    }
                };
            }
            finally { Native.inlay_result_free(r); }
        }
    }

    public struct ChatMessage
    {
        public string Role, Content;
        public ChatMessage(string role, string content) { Role = role; Content = content; }

        internal static Native.inlay_chat_message[] ToNative(IList<ChatMessage> messages, List<IntPtr> owned)
        {
            var m = new Native.inlay_chat_message[messages.Count];
            for (int i = 0; i < m.Length; i++)
            {
                m[i].role = Utf8.Alloc(messages[i].Role, "a message role", owned);
                m[i].content = Utf8.Alloc(messages[i].Content, "a message content", owned);
            }
            return m;
        }
    }

    public sealed class ChatOptions
    {
        public string Template;            // Jinja source instead of the model's; null = the model's
        public Thinking Thinking = Thinking.Default;
        public bool AddGenerationPrompt = true;

        internal static Native.inlay_chat_params ToNative(ChatOptions o, List<IntPtr> owned)
        {
            o = o ?? new ChatOptions();
            var p = new Native.inlay_chat_params();
            Native.inlay_chat_params_init_size(ref p, Native.SizeOf<Native.inlay_chat_params>());
            p.thinking = (int)o.Thinking;
            p.add_generation_prompt = o.AddGenerationPrompt;
            if (o.Template != null) p.chat_template = Utf8.Alloc(o.Template, "the chat template", owned);
            return p;
        }
    }

    /// <summary>One conversation. Calls on it run one at a time (another thread's call
    /// meanwhile fails with Status.Busy); Cancel may come from any thread. Dispose frees it
    /// once no call is using it (SafeHandle reference counting).</summary>
    public sealed class Session : IDisposable
    {
        readonly SessionHandle handle;

        internal Session(Model model, int contextLength)
        {
            var p = new Native.inlay_session_params();
            Native.inlay_session_params_init_size(ref p, Native.SizeOf<Native.inlay_session_params>());
            p.context_length = contextLength;
            ModelHandle mh = model.Handle; // ObjectDisposedException once the model is disposed
            bool added = false;
            mh.DangerousAddRef(ref added);
            try
            {
                IntPtr s;
                InlayException.Check(Native.inlay_session_create(mh, ref p, out s));
                handle = new SessionHandle(s, mh);
            }
            catch
            {
                mh.DangerousRelease();
                throw;
            }
        }

        public void Dispose() { handle.Dispose(); }
        internal bool IsClosed { get { return handle.IsClosed; } }

        /// <summary>Stops a call running on this session (Status.Cancelled, StopReason.Cancelled)
        /// after at most one more token. Any thread; ignored while no call runs.</summary>
        public void Cancel() { InlayException.Check(Native.inlay_session_cancel(handle)); }

        // For a CancellationToken's callback, which may run on any thread and whose
        // exceptions would reach whoever cancelled the token.
        void CancelQuietly()
        {
            try { Native.inlay_session_cancel(handle); }
            catch (ObjectDisposedException) { }
        }

        public void Reset() { InlayException.Check(Native.inlay_session_reset(handle)); }

        public int TokenCount
        {
            get
            {
                UIntPtr n;
                InlayException.Check(Native.inlay_session_n_tokens(handle, out n));
                return (int)n;
            }
        }

        delegate Status Invoke(ref Native.inlay_generate_params p, out IntPtr result);

        // One generating call: the token delegate lives until the call returns, and the
        // token's registration turns its cancellation into inlay_session_cancel.
        Result Run(GenerateOptions options, Func<int, string, bool> onToken, CancellationToken ct, Invoke invoke,
                   List<IntPtr> owned)
        {
            Native.inlay_generate_params p = (options ?? new GenerateOptions()).ToNative(owned);
            Exception thrown = null;
            Native.TokenFn callback = null;
            if (onToken != null || ct.CanBeCanceled)
            {
                callback = (token, piece, len, user) =>
                {
                    // Exceptions must not cross the native frames: keep the first, stop, rethrow.
                    try
                    {
                        // A token cancelled before the library registered the call: stop now.
                        if (ct.IsCancellationRequested) CancelQuietly();
                        return onToken == null || onToken(token, Utf8.Decode(piece, (int)len));
                    }
                    catch (Exception e) { thrown = thrown ?? e; return false; }
                };
                p.on_token = Marshal.GetFunctionPointerForDelegate(callback);
            }
            IntPtr r;
            Status status;
            string message = null;
            using (ct.Register(CancelQuietly))
            {
                status = invoke(ref p, out r);
                if (status != Status.Ok) message = Utf8.Decode(Native.inlay_last_error());
            }
            GC.KeepAlive(callback);
            Result result = r == IntPtr.Zero ? null : Result.Take(r);
            if (thrown != null) ExceptionDispatchInfo.Capture(thrown).Throw();
            if (status != Status.Ok)
            {
                Exception inner = status == Status.Cancelled && ct.IsCancellationRequested
                    ? new OperationCanceledException(ct) : null;
                throw new InlayException(status, message, inner) { Result = result };
            }
            return result;
        }

        /// <summary>Appends prompt and generates. onToken gets each token and its text on this
        /// thread (false stops: StopReason.Callback). A cancellation throws InlayException
        /// (Status.Cancelled) whose Result holds what was produced.</summary>
        public Result Generate(string prompt, GenerateOptions options = null, Func<int, string, bool> onToken = null,
                               CancellationToken ct = default(CancellationToken))
        {
            byte[] cprompt = Utf8.Encode(prompt, "the prompt");
            var owned = new List<IntPtr>();
            try
            {
                return Run(options, onToken, ct, (ref Native.inlay_generate_params p, out IntPtr r) =>
                    Native.inlay_session_generate(handle, cprompt, ref p, out r), owned);
            }
            finally { Utf8.FreeAll(owned); }
        }

        /// <summary>Renders the conversation with the chat template, processes what the session
        /// lacks of it and generates the reply (pass each reply back as an "assistant" message).</summary>
        public Result Chat(IList<ChatMessage> messages, ChatOptions chat = null, GenerateOptions options = null,
                           Func<int, string, bool> onToken = null, CancellationToken ct = default(CancellationToken))
        {
            var owned = new List<IntPtr>();
            try
            {
                Native.inlay_chat_message[] m = ChatMessage.ToNative(messages, owned);
                Native.inlay_chat_params cp = ChatOptions.ToNative(chat, owned);
                return Run(options, onToken, ct, (ref Native.inlay_generate_params p, out IntPtr r) =>
                    Native.inlay_session_chat(handle, m, (UIntPtr)m.Length, ref cp, ref p, out r), owned);
            }
            finally { Utf8.FreeAll(owned); }
        }
    }
}
