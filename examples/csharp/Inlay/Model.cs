// Model.cs: loading a model (progress, device), its info, tokenizing, the chat template.
using System;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Text;

namespace Inlay
{
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
}
